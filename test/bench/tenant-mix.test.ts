import { describe, expect, it } from 'vitest'
import { equalTenants, mixTotal, parseTenantMix, TenantMixError, tenantsOf } from '../../bench/rag/tenant-mix.js'

describe('tenant mix', () => {
  it('parses NxSIZE groups joined by +', () => {
    expect(parseTenantMix('4x25000')).toEqual({ kind: 'groups', groups: [{ count: 4, chunks: 25000 }] })
    const mix = parseTenantMix('2x20000+500x100')
    expect(mixTotal(mix)).toBe(90_000)
    const tenants = tenantsOf(mix, 90_000)
    expect(tenants).toHaveLength(502)
    expect(tenants[0]).toEqual({ id: 't00001', chunks: 20000 })
    expect(tenants.at(-1)).toEqual({ id: 't00502', chunks: 100 })
  })

  it('zipf:N spreads the chunk count over N tenants, largest first, summing exactly', () => {
    const tenants = tenantsOf(parseTenantMix('zipf:1000'), 300_000)
    expect(tenants).toHaveLength(1000)
    expect(tenants.reduce((s, t) => s + t.chunks, 0)).toBe(300_000)
    expect(tenants[0]!.chunks).toBeGreaterThan(tenants[1]!.chunks)
    expect(tenants[0]!.chunks / tenants[9]!.chunks).toBeCloseTo(10, 0)
    expect(tenants.at(-1)!.chunks).toBeGreaterThanOrEqual(1)
    expect(parseTenantMix('zipf:10:1.5')).toEqual({ kind: 'zipf', tenants: 10, exponent: 1.5 })
  })

  it('equal tenants share the remainder', () => {
    expect(equalTenants(3, 10).map((t) => t.chunks)).toEqual([4, 3, 3])
  })

  it.each(['', '4x', 'x100', '4*100', '4x100+', 'zipf:', 'zipf:0', 'zipf:10:0', '0x100', '4x0', 'lots'])('rejects %j', (text) => {
    expect(() => parseTenantMix(text)).toThrow(TenantMixError)
  })

  it('zipf needs at least one chunk per tenant', () => {
    expect(() => tenantsOf(parseTenantMix('zipf:100'), 50)).toThrow(TenantMixError)
  })
})
