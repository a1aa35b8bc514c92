import type { TenantSize } from '../synthetic/corpus.js'

/** A parsed `--tenant-mix`: explicit groups of equal tenants, or a Zipf mix scaled to the chunk count. */
export type TenantMix =
  { kind: 'groups'; groups: Array<{ count: number; chunks: number }> } | { kind: 'zipf'; tenants: number; exponent: number }

/** A malformed mix; the message says what is expected. */
export class TenantMixError extends Error {}

/**
 * Parses a tenant mix: `4x25000` (4 tenants of 25,000 chunks), `1000x300`, groups joined by `+`
 * (`2x20000+500x100`), or `zipf:1000` (1,000 tenants with Zipf-distributed sizes, exponent 1.0;
 * `zipf:1000:1.2` sets it).
 *
 * ### Examples
 * ```ts
 * parseTenantMix('2x20000+500x100') // { kind: 'groups', groups: [{ count: 2, chunks: 20000 }, { count: 500, chunks: 100 }] }
 * ```
 */
export function parseTenantMix(text: string): TenantMix {
  const spec = text.trim().toLowerCase()
  const zipf = /^zipf:(\d+)(?::(\d+(?:\.\d+)?))?$/.exec(spec)
  if (zipf) {
    const tenants = Number(zipf[1])
    const exponent = zipf[2] === undefined ? 1 : Number(zipf[2])
    if (tenants < 1 || tenants > 1_000_000) throw new TenantMixError(`zipf tenants must be from 1 to 1,000,000, got ${tenants}`)
    if (!(exponent > 0 && exponent <= 4)) throw new TenantMixError(`zipf exponent must be above 0 and at most 4, got ${zipf[2]}`)
    return { kind: 'zipf', tenants, exponent }
  }
  const groups = spec.split('+').map((part) => {
    const m = /^(\d+)x(\d+)$/.exec(part.trim())
    if (!m)
      throw new TenantMixError(
        `malformed tenant mix "${text}": use NxSIZE groups joined by "+" (4x25000, 1000x300+2x20000) or zipf:TENANTS`,
      )
    const count = Number(m[1])
    const chunks = Number(m[2])
    if (count < 1 || chunks < 1) throw new TenantMixError(`tenant mix "${part}": counts and sizes must be at least 1`)
    return { count, chunks }
  })
  return { kind: 'groups', groups }
}

/** The chunks a mix adds up to (undefined for Zipf: it takes the chunk count it is given). */
export function mixTotal(mix: TenantMix): number | undefined {
  return mix.kind === 'groups' ? mix.groups.reduce((s, g) => s + g.count * g.chunks, 0) : undefined
}

/**
 * The tenants of a mix, largest first, ids `t00001`...; Zipf sizes are scaled to `chunks` in all
 * (every tenant gets at least 1).
 *
 * ### Examples
 * ```ts
 * tenantsOf(parseTenantMix('zipf:100'), 20000) // 100 tenants, sizes ∝ 1/rank, summing to 20,000
 * ```
 */
export function tenantsOf(mix: TenantMix, chunks: number): TenantSize[] {
  let sizes: number[]
  if (mix.kind === 'groups') {
    sizes = mix.groups.flatMap((g) => Array.from({ length: g.count }, () => g.chunks))
  } else {
    if (chunks < mix.tenants) throw new TenantMixError(`zipf:${mix.tenants} needs at least ${mix.tenants} chunks, got ${chunks}`)
    const weights = Array.from({ length: mix.tenants }, (_, i) => 1 / (i + 1) ** mix.exponent)
    const sum = weights.reduce((s, w) => s + w, 0)
    sizes = weights.map((w) => Math.max(1, Math.floor((w / sum) * chunks)))
    // Hand the rounding remainder to the largest tenants so the total is exact.
    let rest = chunks - sizes.reduce((s, n) => s + n, 0)
    for (let i = 0; rest > 0; i = (i + 1) % sizes.length, rest--) sizes[i]!++
    for (let i = sizes.length - 1; rest < 0 && i >= 0; i--) {
      const take = Math.min(sizes[i]! - 1, -rest)
      sizes[i]! -= take
      rest += take
    }
  }
  return named(sizes)
}

/**
 * `count` tenants sharing `chunks` as evenly as possible.
 *
 * ### Examples
 * ```ts
 * equalTenants(3, 10) // sizes 4, 3, 3
 * ```
 */
export function equalTenants(count: number, chunks: number): TenantSize[] {
  return named(Array.from({ length: count }, (_, i) => Math.floor(chunks / count) + (i < chunks % count ? 1 : 0)))
}

function named(sizes: number[]): TenantSize[] {
  sizes.sort((a, b) => b - a)
  const width = String(sizes.length).length
  return sizes.map((n, i) => ({ id: `t${String(i + 1).padStart(Math.max(5, width), '0')}`, chunks: n }))
}
