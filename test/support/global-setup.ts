import type { TestProject } from 'vitest/node'
import { checkProvider, provision, type ProvisionedDatabase } from '../../src/index.js'
import { providers, startPgBouncer, type PgBouncer } from '../../src/bench-kit.js'
import { makePgliteSnapshot } from './pglite-snapshot.js'
import type { TestTarget } from './test-target.js'

/**
 * Provisions one database server for the whole run and provides its URL to every test file.
 * `PGSCALE_TEST_PROVIDER` forces a provider (`local`, `url`, `container`, `embedded`; default `auto`);
 * `PGSCALE_TEST_DATABASE_URL` gives a server (the `url` provider). On `embedded` there is no URL to
 * share (PGlite lives in one process): each file starts its own instance. With
 * `PGSCALE_TEST_CITUS_WORKERS=N` (Citus installed; `local` provider) the server is a Citus
 * coordinator with N workers on loopback, and each file's database a Citus cluster of its own;
 * with `PGSCALE_TEST_DATABASE_URL` pointing at a Citus coordinator, the same from its workers.
 * With `PGSCALE_TEST_PGBOUNCER=1` (a server provider, `pgbouncer` installed) every test file
 * connects through PgBouncer in transaction mode with 3 server connections per database.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const requested = process.env.PGSCALE_TEST_PROVIDER ?? 'auto'
  const url = process.env.PGSCALE_TEST_DATABASE_URL
  const citusWorkers = Number(process.env.PGSCALE_TEST_CITUS_WORKERS ?? 0)
  let provisioned: ProvisionedDatabase | undefined
  let bouncer: PgBouncer | undefined
  let snapshot: { file: string; remove: () => void } | undefined
  let target: TestTarget
  // Every registered provider with a URL other processes can use (all but the in-process one).
  const serverChecks = providers()
    .filter((p) => !p.inProcess)
    .map((p) => ({
      provider: p.name,
      check: checkProvider(p.name, { url }),
    }))
  const noServer = requested === 'auto' && serverChecks.every((s) => !s.check.available)
  if (requested === 'embedded' || noServer) {
    const skipped = noServer ? serverChecks.map((s) => ({ provider: s.provider, reason: s.check.available ? '' : s.check.reason })) : []
    target = { provider: 'embedded', skipped }
  } else {
    provisioned = await provision({
      provider: requested,
      url,
      ...(citusWorkers > 0 && requested !== 'url' ? { citus: { workers: citusWorkers } } : {}),
      // Tests need durability no more than a throwaway cluster does: fsync off keeps them quick.
      settings: { fsync: 'off', synchronous_commit: 'off', full_page_writes: 'off' },
    })
    target = { provider: provisioned.info.provider, url: provisioned.url, skipped: provisioned.info.skipped }
    if (provisioned.info.citus?.workers) target.citusWorkers = provisioned.info.citus.workers
    if (process.env.PGSCALE_TEST_PGBOUNCER === '1' && provisioned.url) {
      bouncer = await startPgBouncer({ upstreamUrl: provisioned.url, poolMode: 'transaction', poolSize: 3 })
      target = { ...target, url: bouncer.url, directUrl: provisioned.url, pooler: 'pgbouncer' }
    }
    if (provisioned.info.provider === 'embedded') {
      await provisioned.stop()
      provisioned = undefined
    } else {
      // The per-file databases are created from here; keep this handle's pool small.
      await provisioned.db.close()
    }
  }
  if (!target.url) {
    // One fresh PGlite's data directory, loaded by every file instead of its own initdb (pglite-snapshot.ts).
    snapshot = await makePgliteSnapshot()
    target = { ...target, pgliteSnapshot: snapshot.file }
  }
  const info = provisioned?.info
  console.log(
    `[pgscale tests] provider=${target.provider}` +
      (info
        ? ` postgres=${info.serverVersion} pgvector=${info.pgvectorVersion}` +
          (info.citus ? ` citus=${info.citus.version} workers=${info.citus.workers} (a Citus cluster per file)` : '') +
          (bouncer ? ` through PgBouncer (transaction pooling, 3 server connections per database) on port ${bouncer.port}` : '')
        : " (PGlite: PostgreSQL 17 + pgvector 0.8.1, one instance per file, each loaded from one fresh instance's data directory)") +
      (target.skipped.length ? `; skipped: ${target.skipped.map((s) => `${s.provider} (${s.reason})`).join('; ')}` : ''),
  )
  project.provide('pgscaleTarget', target)
  return async () => {
    await bouncer?.stop()
    await provisioned?.stop()
    snapshot?.remove()
  }
}
