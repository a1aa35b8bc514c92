import { sql } from 'kysely'
import { describe, expect, it } from 'vitest'
import { InvalidArgumentError, provision, ProviderUnavailableError } from '../../src/index.js'
import { findLocalBinaries } from '../../src/bench-kit.js'
import { CITUS_OPT_IN, itUnless } from '../support/skip.js'

/**
 * `provision({ provider: 'local', citus: { workers } })`: a coordinator and workers on loopback when
 * Citus is installed (the cluster test is opt-in: PGSCALE_TEST_CITUS_WORKERS=N, since CI has no
 * Citus); a clear error when it is not; refused for any other provider.
 */
const found = findLocalBinaries()
const citusVersion = found.ok ? found.binaries.citusVersion : undefined
const optIn = Number(process.env.PGSCALE_TEST_CITUS_WORKERS ?? 0)

describe('provision with citus', () => {
  it('is refused for a provider other than local, before anything starts', async () => {
    for (const provider of ['embedded', 'container', 'url', 'auto']) {
      await expect(provision({ provider, citus: { workers: 2 } })).rejects.toBeInstanceOf(InvalidArgumentError)
    }
  })

  itUnless(
    !found.ok
      ? `needs PostgreSQL binaries (the local provider): ${found.reason}`
      : citusVersion !== undefined && `Citus ${citusVersion} is installed here: the test of its absence cannot run`,
  )('without Citus installed: a ProviderUnavailableError that says how to install it', async () => {
    const err = await provision({ provider: 'local', citus: { workers: 2 } }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(ProviderUnavailableError)
    expect((err as Error).message).toMatch(/Citus is not installed for this PostgreSQL.*installation/)
  })

  itUnless(citusVersion === undefined ? 'needs Citus installed for this PostgreSQL (opt-in)' : !(optIn > 0) && CITUS_OPT_IN)(
    'with Citus installed (opt-in): a coordinator and N workers, registered; a tenant query routes to one shard',
    async () => {
      const p = await provision({ provider: 'local', citus: { workers: optIn } })
      try {
        expect(p.info.citus).toEqual({ version: expect.stringMatching(/^\d+\.\d+/), workers: optIn })
        await sql`create table routed (tenant_id text not null, n int not null, primary key (tenant_id, n))`.execute(p.db)
        await sql`select create_distributed_table('routed', 'tenant_id')`.execute(p.db)
        await sql`insert into routed select 't' || (g % 7), g from generate_series(1, 700) g`.execute(p.db)
        const { rows } = await sql<{ 'QUERY PLAN': string }>`explain select count(*) from routed where tenant_id = 't3'`.execute(p.db)
        const plan = rows.map((r) => r['QUERY PLAN']).join('\n')
        expect(plan).toMatch(/Custom Scan \(Citus Adaptive\)/)
        expect(plan).toMatch(/Task Count: 1\b/)
        const { rows: count } = await sql<{ n: number }>`select count(*)::int as n from routed where tenant_id = 't3'`.execute(p.db)
        expect(count[0]!.n).toBe(100)
      } finally {
        await p.stop()
      }
    },
    120_000,
  )
})
