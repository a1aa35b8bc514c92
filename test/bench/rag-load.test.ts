import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { sql } from 'kysely'
import pg from 'pg'
import { afterAll, beforeAll, afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { removeTempDirs, tempDir } from '../support/temp-dir.js'
import { ragBench } from '../../cli/rag-bench.js'
import { checkProvider, connect } from '../../src/index.js'
import { parseMix } from '../../bench/rag/load/ladder-analysis.js'
import { loadContext, makeLoadInputs } from '../../bench/rag/load/load-inputs.js'
import { inThisThread, runLoadStep } from '../../bench/rag/load/load-step.js'
import { LoadWorkers } from '../../bench/rag/load/load-workers.js'
import { corpusSpec, LOAD_SCHEMA, runShape, seedLoadCorpus, type LoadBenchConfig } from '../../bench/rag/load/run-load-bench.js'
import type { CorpusTruth } from '../../bench/rag/load/corpus-truth.js'
import { renderLoadReport } from '../../bench/rag/load/report/render-load-report.js'
import type { Database, PgVectorStore } from '../../src/index.js'
import { parseTenantMix, tenantsOf } from '../../bench/rag/tenant-mix.js'
import { generatorCalls, queryVectors } from '../../bench/synthetic/corpus.js'
import { itWithServer, itUnless, NEEDS_SERVER } from '../support/skip.js'
import { testTarget, useTestDatabase } from '../support/test-database.js'

afterAll(removeTempDirs)

/** `rag-bench load` in process on a small corpus against the test database (a server: it needs concurrent connections). */
const t = useTestDatabase()
// Made before the first test (a file whose tests are all skipped runs no afterAll, and makes none).
let dir = ''
beforeAll(() => void (dir = tempDir('pgscale-load-')))
let stderr: string[]

beforeEach(() => {
  stderr = []
  vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => (stderr.push(String(chunk)), true))
  vi.spyOn(process.stdout, 'write').mockImplementation(() => true)
  vi.spyOn(console, 'log').mockImplementation(() => {})
})
afterEach(() => vi.restoreAllMocks())

const tenants = tenantsOf(parseTenantMix('zipf:6'), 3000)
const config = (over: Partial<LoadBenchConfig> = {}): LoadBenchConfig => ({
  tenants,
  mixLabel: 'zipf:6',
  chunks: 3000,
  dim: 16,
  chunksPerDoc: 10,
  partitions: 0,
  shape: 'load',
  clients: [1, 2],
  seconds: 1,
  warmupSeconds: 0.2,
  workers: 2,
  spikeFactor: 2,
  spikeSeconds: 0.5,
  breakpointMaxClients: 4,
  soakClients: 2,
  mix: parseMix('search=70,filtered=10,hybrid=10,replace=8,delete=2'),
  maxP95Ms: 50,
  seed: 'load-test',
  soakMaxGrowthMbPerHour: 50,
  keep: false,
  ...over,
})
const quiet = () => {}
/** One thread's context on the seeded corpus (the bench's own inputs). */
const threadContext = (store: PgVectorStore, pool: Database, connections: number, truth: CorpusTruth, c: LoadBenchConfig) =>
  loadContext({
    store,
    pool: { db: pool, connections },
    truth,
    inputs: makeLoadInputs({ ...corpusSpec(c), chunksPerDoc: c.chunksPerDoc }),
    mix: c.mix,
    seed: 'test:load',
  })

/**
 * Seeds the load corpus of `config(over)` through a pool of `connections`, runs `fn`, and always
 * drops the load schema and closes the pool.
 */
async function withSeededLoad(
  connections: number,
  over: Partial<LoadBenchConfig>,
  fn: (s: { pool: Database; c: LoadBenchConfig; store: PgVectorStore; truth: CorpusTruth }) => Promise<void>,
): Promise<void> {
  const pool = await connect({ connectionString: t.url!, max: connections })
  try {
    const c = config(over)
    const { store, truth } = await seedLoadCorpus(t.db, pool, c, quiet)
    await fn({ pool, c, store, truth })
  } finally {
    await sql.raw(`drop schema if exists ${LOAD_SCHEMA} cascade`).execute(t.db)
    await pool.close()
  }
}

const target = testTarget()
const withServer = itWithServer(target)

describe('rag-bench load', () => {
  withServer('climbs the ladder with every answer verified and writes every documented key', async () => {
    const out = join(dir, 'load.json')
    const code = await ragBench([
      'load',
      '--pg',
      t.url!,
      '--chunks',
      '3000',
      '--tenant-mix',
      'zipf:6',
      '--dim',
      '16',
      '--chunks-per-doc',
      '10',
      '--clients',
      '1,2,4',
      '--duration',
      '1',
      '--warmup',
      '0.2',
      '--workers',
      '2',
      '--json',
      out,
      '--plot',
      join(dir, 'ladder.svg'),
    ])
    expect(stderr.join('')).not.toMatch(/rag-bench load: /)
    expect(code).toBe(0)
    const report = JSON.parse(readFileSync(out, 'utf8'))
    const required = [
      'baseline',
      'breaks',
      'config',
      'heldUpTo',
      'isolation',
      'machine',
      'method',
      'process',
      'saturates',
      'seeding',
      'server',
      'shape',
      'smoke',
      'spike',
      'steps',
      'verdict',
      'warnings',
    ]
    expect(Object.keys(report)).toEqual(expect.arrayContaining(required))
    expect(Object.keys(report).every((k) => [...required, 'soak'].includes(k))).toBe(true)
    // The verdict is always written: a gate reading the JSON tells "held up to N" from a missing key.
    if (report.verdict === 'held') expect([report.breaks, report.heldUpTo]).toEqual([null, 4])
    else expect(report.breaks).toMatchObject({ clients: expect.any(Number), why: expect.any(String) })
    expect(report.shape).toBe('load')
    expect(report.baseline).toMatchObject({ searches: 1000 })
    expect(report.baseline.p95Ms).toBeGreaterThanOrEqual(report.baseline.p50Ms)
    expect(report.spike).toBeNull()
    expect(Object.keys(report.steps[0]).sort()).toEqual(
      [
        'clientCpu',
        'clients',
        'cpuSource',
        'database',
        'errorRate',
        'failures',
        'generated',
        'operations',
        'phase',
        'processCpu',
        'threadCpu',
        'readP95Ms',
        'rejections',
        'rowsChecked',
        'seconds',
        'throughput',
        'wrongRows',
        'wrongSample',
      ].sort(),
    )
    expect(report.smoke).toMatchObject({ queries: 50, wrongRows: 0, passed: true })
    expect(report.smoke.recallAt10).toBeGreaterThanOrEqual(0.9)
    expect(report.steps.map((s: { clients: number }) => s.clients)).toEqual([1, 2, 4])
    for (const s of report.steps) {
      expect(s.generated).toBe(0)
      expect(s.threadCpu).toHaveLength(Math.min(s.clients, 2))
      expect(s.operations.search.count).toBeGreaterThan(0)
      expect(s.operations.search.p95Ms).toBeGreaterThanOrEqual(s.operations.search.p50Ms)
      // ACL-filtered searches ran, their rows verified with the rest (tenant, document, ACL group).
      expect(s.operations.filtered.count).toBeGreaterThan(0)
      expect(s.wrongRows).toBe(0)
      expect(s.database.commits).toBeGreaterThan(0)
      expect(s.database.bufferHitRatio).toBeGreaterThan(0)
      expect(s.database.samples).toBeGreaterThan(0)
      expect(Object.values(s.operations).reduce((n: number, o) => n + (o as { errors: number }).errors, 0)).toBe(0)
    }
    expect(report.isolation.wrongRows).toBe(0)
    expect(readFileSync(join(dir, 'ladder.svg'), 'utf8').match(/aria-roledescription="bar"/g)?.length).toBe(3)
    expect(report.isolation.rowsChecked).toBe(report.steps.reduce((n: number, s: { rowsChecked: number }) => n + s.rowsChecked, 0))
    expect(report.isolation.rowsChecked).toBeGreaterThan(100)
    const { rows } = await sql<{ present: boolean }>`select to_regnamespace(${LOAD_SCHEMA}) is not null as present`.execute(t.db)
    expect(rows[0]!.present).toBe(false)
  })

  withServer('nothing the clients send is generated while a step runs (the generator counts its calls)', () =>
    withSeededLoad(3, {}, async ({ pool, c, store, truth }) => {
      const ctx = threadContext(store, pool, 3, truth, c)
      const before = generatorCalls()
      const step = await runLoadStep(inThisThread(ctx), t.db, 2, 0.6, 0.1)
      expect(Object.values(step.operations).reduce((n, o) => n + o.count, 0)).toBeGreaterThan(0)
      expect(generatorCalls()).toBe(before)
      expect(step.generated).toBe(0)
      // Every tenant that can be drawn has its queries already.
      for (const tenant of tenants) expect(ctx.query(tenant.id).embedding).toHaveLength(c.dim)
      // A harness that makes a query inside the clock is caught: the step counts the call.
      const generating = { ...ctx, query: (id: string) => ({ embedding: queryVectors(corpusSpec(c), id, 1)[0]!, text: 'made now' }) }
      const measured = await runLoadStep(inThisThread(generating), t.db, 1, 0.3, 0)
      expect(measured.generated).toBeGreaterThan(0)
    }),
  )

  withServer('clients on worker threads: each thread its own pool and CPU, one shared truth, every row verified', () =>
    withSeededLoad(3, { mix: parseMix('search=60,filtered=10,replace=20,delete=10') }, async ({ c, truth }) => {
      let workers: LoadWorkers | undefined
      try {
        const inputs = makeLoadInputs({ ...corpusSpec(c), chunksPerDoc: c.chunksPerDoc })
        const shared = truth.share()
        const table = `${LOAD_SCHEMA}.chunks`
        const data = (i: number) => ({
          url: t.url!,
          table,
          dimensions: c.dim,
          partitions: 0,
          truth: shared,
          inputs,
          mix: c.mix,
          seed: `w${i}`,
          connections: 2,
          connectionTimeoutMillis: 10_000,
        })
        workers = await LoadWorkers.start(2, data)
        const before = generatorCalls()
        const step = await runLoadStep(workers, t.db, 3, 1, 0.2)
        expect(generatorCalls()).toBe(before)
        expect(step.generated).toBe(0)
        expect(step.threadCpu).toHaveLength(2)
        expect(step.cpuSource).toBe('thread')
        for (const cpu of step.threadCpu) expect(cpu).toBeGreaterThan(0)
        expect(step.processCpu).toBeGreaterThan(0)
        expect(step.operations.search.count + step.operations.filtered.count).toBeGreaterThan(0)
        expect(step.operations.replace.count + step.operations.delete.count).toBeGreaterThan(0)
        expect(step.rowsChecked).toBeGreaterThan(0)
        expect(step.wrongRows).toBe(0)
        expect(step.database.commits).toBeGreaterThan(0)
        // Three threads' backends (ours and two workers' pools) at once.
        const { rows } = await sql<{ n: number }>`
        select count(distinct pid)::int as n from pg_stat_activity where datname = current_database() and backend_type = 'client backend'`.execute(
          t.db,
        )
        expect(rows[0]!.n).toBeGreaterThanOrEqual(3)
        // The writes of the workers are in the truth the main thread holds (shared memory): every
        // document the truth says is gone is gone from the table, and every one it says exists is there.
        const { rows: docs } = await sql<{ tenant_id: string; document_id: string }>`
        select distinct tenant_id, document_id from ${sql.table(LOAD_SCHEMA)}.chunks`.execute(t.db)
        const present = new Set(docs.map((d) => `${d.tenant_id}/${d.document_id}`))
        let deleted = 0
        for (const tenantId of truth.tenants())
          for (const id of truth.documentIds(tenantId)) {
            const gone = truth.check(tenantId, [{ documentId: id, metadata: { owner: tenantId } }], Date.now() + 1e6).length > 0
            expect([`${tenantId}/${id}`, present.has(`${tenantId}/${id}`)]).toEqual([`${tenantId}/${id}`, !gone])
            if (gone) deleted++
          }
        expect(deleted).toBeGreaterThan(0)
      } finally {
        await workers?.close()
      }
    }),
  )

  withServer('breakpoint doubles the clients until a step breaks; spike runs base, burst and recovery', () =>
    withSeededLoad(9, { mix: parseMix('search=1') }, async ({ pool, c, store, truth }) => {
      const runner = inThisThread(threadContext(store, pool, 9, truth, c))
      const held = await runShape(runner, t.db, { ...c, shape: 'breakpoint', seconds: 0.3, warmupSeconds: 0, maxP95Ms: 10_000 }, quiet)
      expect(held.steps.map((s) => `${s.phase}:${s.clients}`)).toEqual(['ramp:1', 'ramp:2', 'ramp:4'])
      // A bound no read meets: the first ramp step breaks, and the ramp stops there.
      const broke = await runShape(runner, t.db, { ...c, shape: 'breakpoint', seconds: 0.3, warmupSeconds: 0, maxP95Ms: 0.0001 }, quiet)
      expect(broke.steps.map((s) => `${s.phase}:${s.clients}`)).toEqual(['ramp:1'])
      const spike = await runShape(
        runner,
        t.db,
        { ...c, shape: 'spike', clients: [2], seconds: 0.4, spikeFactor: 4, spikeSeconds: 0.3 },
        quiet,
      )
      expect(spike.steps.map((s) => `${s.phase}:${s.clients}`)).toEqual(['base:2', 'burst:8', 'recovery:2'])
      expect(spike.steps.map((s) => s.seconds)).toEqual([0.4, 0.3, 0.4])
      for (const s of spike.steps) expect([s.wrongRows, s.operations.search.count > 0]).toEqual([0, true])
    }),
  )

  withServer('the verifier catches a planted row of another tenant', () =>
    withSeededLoad(3, { mix: parseMix('search=1') }, async ({ pool, c, store, truth }) => {
      const ctx = threadContext(store, pool, 3, truth, c)
      const victim = tenants[0]!.id
      // A leak as it would look: rows in the victim's scope that belong to another tenant, placed
      // exactly where the victim's queries land.
      const planted = Array.from({ length: 8 }, () => ctx.query(victim).embedding)
      await store.forTenant(victim).replaceDocument(
        'planted',
        planted.map((embedding) => ({ content: 'not yours', embedding, metadata: { owner: tenants[1]!.id } })),
      )
      const step = await runLoadStep(inThisThread({ ...ctx, pickTenant: () => victim }), t.db, 1, 0.5, 0)
      expect(step.wrongRows).toBeGreaterThan(0)
      expect(step.wrongSample[0]).toMatchObject({ caller: victim, owner: tenants[1]!.id, why: 'other tenant' })
    }),
  )

  withServer('a client that cannot get a connection in time is a rejection, not an error', () =>
    withSeededLoad(2, { mix: parseMix('search=1') }, async ({ c, truth }) => {
      // Connected with a timeout a busy machine can meet, then starved to 50 ms for the step (pg-pool
      // reads it at each acquire): a 50 ms timeout on the first connect failed under load.
      const raw = new pg.Pool({ connectionString: t.url!, max: 1, connectionTimeoutMillis: 10_000 })
      const starved = await connect(raw)
      raw.options.connectionTimeoutMillis = 50
      try {
        const { PgVectorStore } = await import('../../src/index.js')
        const store = await PgVectorStore.open(starved, { table: `${LOAD_SCHEMA}.chunks`, dimensions: c.dim })
        const ctx = threadContext(store, starved, 1, truth, c)
        // Hold the starved pool's only connection for the whole step.
        const held = starved.transaction(async (trx) => void (await sql`select pg_sleep(1.2)`.execute(trx)))
        await new Promise((resolve) => setTimeout(resolve, 100))
        const step = await runLoadStep(inThisThread(ctx), t.db, 3, 0.8, 0)
        await held
        expect(step.rejections).toBeGreaterThan(0)
        expect(step.operations.search.errors).toBe(0)
        expect(step.failures.rejections[0]).toMatch(/timeout/i)
      } finally {
        await starved.close()
        await raw.end().catch(() => {})
      }
    }),
  )
})

/**
 * `rag-bench load --replicas`: the provider starts a primary and streaming standbys of its own
 * (`--db local`), whatever the run's target; on PGlite runs, and where the local provider is
 * unavailable, skipped with the reason.
 */
const local = checkProvider('local')
const withStandbys = itUnless(
  !target.url
    ? `${NEEDS_SERVER} (and --replicas starts a local primary with standbys)`
    : !local.available && `needs the local provider to start a primary and streaming standbys: ${local.reason}`,
)
/** A brief ladder on its own local primary with one standby: 40 small tenants, so writes land everywhere. */
const replicaArgs = (out: string, ...more: string[]) => [
  'load',
  '--db',
  'local',
  '--replicas',
  '1',
  '--chunks',
  '2000',
  '--tenant-mix',
  '40x50',
  '--dim',
  '16',
  '--workers',
  '2',
  '--warmup',
  '0.3',
  '--json',
  out,
  ...more,
]

describe('rag-bench load --replicas', () => {
  withStandbys(
    'runs the ladder side by side on the primary and through a standby with every answer verified: routing counts, the lagging and stopped standby, the probe and the targets',
    async () => {
      const out = join(dir, 'replicas.json')
      const args = [
        '--chunks-per-doc',
        '10',
        '--clients',
        '1,2',
        '--duration',
        '3',
        '--mix',
        'search=55,filtered=10,hybrid=10,replace=20,delete=5',
      ]
      const code = await ragBench(replicaArgs(out, ...args))
      expect(stderr.join('')).not.toMatch(/rag-bench load: /)
      expect(code).toBe(0)
      const report = JSON.parse(readFileSync(out, 'utf8'))
      expect(Object.keys(report.replicas).sort()).toEqual(
        [
          'catchUpSeconds',
          'comparison',
          'count',
          'lagging',
          'loadAverage',
          'nodes',
          'options',
          'pauseReplay',
          'readOnly',
          'readYourWrites',
          'routingCost',
          'routingLagMsMax',
          'runs',
          'stopReplica',
          'stoppedReplica',
          'targets',
          'tokens',
        ].sort(),
      )
      const r = report.replicas
      expect(r).toMatchObject({ count: 1, tokens: true, pauseReplay: true, stopReplica: true })
      expect(r.nodes).toEqual([expect.stringMatching(/^replica 1 \(127\.0\.0\.1:\d+\)$/)])
      // The steps, in order: the ladder on both arms (the order rotating), searches only per arm, then the faults.
      expect(r.runs.map((x: { kind: string; replicas: number }) => `${x.kind} ${x.replicas}`)).toEqual([
        'ladder 0',
        'ladder 1',
        'ladder 1',
        'ladder 0',
        'read-only 0',
        'read-only 1',
        'lagging 1',
        'stopped 1',
      ])
      // Every answer checked against the truth, the caller's latest writes included: 0 wrong, no call failed.
      expect(report.isolation.wrongRows).toBe(0)
      expect(report.isolation.rowsChecked).toBe(
        r.runs.reduce((n: number, x: { step: { rowsChecked: number } }) => n + x.step.rowsChecked, 0),
      )
      expect(r.readYourWrites).toMatchObject({ wrongRows: 0, pausedSteps: 1 })
      expect(r.readYourWrites.operations).toBeGreaterThan(100)
      expect(r.readYourWrites.tenantsWithTokens).toBeGreaterThan(0)
      // Side by side: each step on the primary only (no routing) and through the standby (routing counted).
      expect(r.comparison.map((a: { clients: number; replicas: number }) => [a.clients, a.replicas])).toEqual([
        [1, 0],
        [1, 1],
        [2, 0],
        [2, 1],
      ])
      for (const a of [...r.comparison, ...r.readOnly]) {
        expect(a).toMatchObject({ wrongRows: 0, failedCalls: 0, throughput: expect.any(Number), searchP50Ms: expect.any(Number) })
        expect(a.searchP95Ms).toBeGreaterThanOrEqual(a.searchP50Ms)
        if (a.replicas === 0) expect([a.replicaShare, a.reads, a.toPrimary]).toEqual([null, null, null])
        else expect(a.reads.primary + a.reads.replicas[0]).toBeGreaterThan(0)
      }
      // Searches only, nothing written since the standby caught up: the standby serves them.
      const [, readOnly] = r.readOnly
      expect(readOnly).toMatchObject({ kind: 'read-only', replicas: 1, replaceP50Ms: null })
      expect(readOnly.reads.replicas[0]).toBeGreaterThan(0)
      // Lagging: replay paused on the standby mid-step; reads of what was written since went to the primary, still right.
      expect(r.lagging).toMatchObject({ pausedReplicas: [1], row: { wrongRows: 0, failedCalls: 0 } })
      expect(r.lagging.row.toPrimary.behindWrite).toBeGreaterThan(0)
      expect(r.lagging.replayLagMsMax[0]).toBeGreaterThan(0)
      // Stopped: no call failed, the reads went on (to the primary while it was down).
      expect(r.stoppedReplica).toMatchObject({ replica: 1, failedCalls: 0 })
      expect(r.stoppedReplica.whileDown.primary).toBeGreaterThan(0)
      // Every step through the standby reports where its reads went and what the standby's lag was.
      for (const { step, replicas } of r.runs.filter((x: { replicas: number }) => x.replicas > 0)) {
        expect(Object.keys(step.replicas)).toEqual(
          expect.arrayContaining(['reads', 'replicaShare', 'waitedForReplay', 'toPrimary', 'nodes', 'fault']),
        )
        expect(step.replicas.nodes).toHaveLength(replicas)
        expect(step.replicas.nodes[0]).toMatchObject({
          reads: expect.any(Number),
          replayLagMsMax: expect.any(Number),
          failures: expect.any(Number),
        })
      }
      // The routing probe ran on the standby; every target is stated with what was measured.
      expect(r.routingCost).toMatchObject({
        searches: expect.any(Number),
        servedByReplica: 1,
        positionCheck: { p50Ms: expect.any(Number) },
      })
      expect(r.targets.map((t: { met: unknown; measured: unknown }) => [typeof t.met, typeof t.measured])).toEqual(
        Array(4).fill(['boolean', 'string']),
      )
      // The report's steps are the ladder through every standby; the human report shows the arms side by side.
      expect(report.steps.map((s: { clients: number }) => s.clients)).toEqual([1, 2])
      expect(renderLoadReport(report)).toMatch(/side by side/)
    },
    240_000,
  )

  withStandbys(
    'without the tokens carried across threads the verifier sees the stale reads (what read-your-writes prevents)',
    async () => {
      const out = join(dir, 'replicas-stale.json')
      // Two documents per tenant (every answer holds rows of both), half the operations writes,
      // replay paused on the only standby for half the lagging step: another thread's write is read stale.
      const args = ['--no-replica-tokens', '--no-stop-replica', '--chunks-per-doc', '25', '--clients', '2', '--duration', '3']
      const code = await ragBench(replicaArgs(out, ...args, '--mix', 'search=50,replace=40,delete=10'))
      expect(code).toBe(1)
      const report = JSON.parse(readFileSync(out, 'utf8'))
      expect(report.replicas.tokens).toBe(false)
      expect(report.isolation.wrongRows).toBeGreaterThan(0)
      const runs: Array<{
        replicas: number
        step: { wrongRows: number; wrongSample: Array<{ why: string; owner: string; caller: string }> }
      }> = report.replicas.runs
      // Only reads through the standby are stale; the primary-only arm is always right.
      for (const x of runs) if (x.replicas === 0) expect(x.step.wrongRows).toBe(0)
      const wrong = runs.flatMap((x) => x.step.wrongSample)
      expect(wrong.length).toBeGreaterThan(0)
      for (const w of wrong) {
        expect(['stale version', 'deleted document']).toContain(w.why)
        expect(w.owner).toBe(w.caller)
      }
    },
    240_000,
  )

  it('needs the local provider and the ladder: --replicas with --pg or another shape is a usage error', async () => {
    expect(await ragBench(['load', '--replicas', '2', '--pg', 'postgres://nobody@127.0.0.1:1/none'])).toBe(2)
    expect(await ragBench(['load', '--replicas', '1', '--db', 'local', '--shape', 'spike'])).toBe(2)
    expect(stderr.join('')).toMatch(/--replicas needs --db local/)
  })
})

describe('rag-bench load on the embedded database', () => {
  itUnless(target.url && 'runs only on PGlite: on a server, load runs (the other tests here)')(
    'says in one line that it needs a server',
    async () => {
      const code = await ragBench(['load', '--db', 'embedded', '--chunks', '1000', '--clients', '1', '--duration', '1'])
      expect(code).toBe(1)
      expect(stderr.join('')).toMatch(/rag-bench load: rag-bench load needs a server/)
    },
  )
})

describe('rag-bench planning', () => {
  withServer(
    'measures planning time at each index count, in one table and in hash partitions, and says whether the own index was used',
    async () => {
      const out = join(dir, 'planning.json')
      const code = await ragBench(['planning', '--pg', t.url!, '--indexes', '2,6', '--samples', '3', '--partitions', '4', '--json', out])
      expect(stderr.join('')).not.toMatch(/rag-bench planning: /)
      expect(code).toBe(0)
      const report = JSON.parse(readFileSync(out, 'utf8'))
      expect(Object.keys(report).sort()).toEqual(['machine', 'method', 'points', 'server'])
      expect(report.points.map((p: { layout: string; indexes: number }) => `${p.layout}:${p.indexes}`)).toEqual([
        'one table:2',
        'one table:6',
        'hash partitions:2',
        'hash partitions:6',
      ])
      for (const p of report.points) {
        for (const key of ['warmPlanMs', 'freshPlanMs', 'searchMs']) {
          expect(p[key].ownIndex).toBeGreaterThan(0)
          expect(p[key].noIndex).toBeGreaterThan(0)
        }
        expect(typeof p.usesOwnIndex).toBe('boolean')
      }
      const { rows } = await sql<{ present: boolean }>`select to_regnamespace('pgscale_planning') is not null as present`.execute(t.db)
      expect(rows[0]!.present).toBe(false)
    },
  )
})

describe('rag-bench quantization', () => {
  withServer('measures each option on the same corpus and names the cheapest that keeps recall@10 ≥ 0.98 per class', async () => {
    const out = join(dir, 'quantization.json')
    const plot = join(dir, 'quantization.svg')
    const argv = ['quantization', '--pg', t.url!, '--chunks', '3000', '--tenant-mix', '2x1200+12x50', '--dim', '16', '--queries', '20']
    const code = await ragBench([...argv, '--rerank', '2,8', '--json', out, '--plot', plot])
    expect(stderr.join('')).not.toMatch(/rag-bench quantization: /)
    expect(code).toBe(0)
    const report = JSON.parse(readFileSync(out, 'utf8'))
    expect(Object.keys(report).sort()).toEqual(['cheapest', 'config', 'machine', 'method', 'options', 'server'])
    expect(report.options.map((o: { label: string }) => o.label)).toEqual([
      'vector',
      'vector + halfvec index',
      'vector + binary index, rerank ×2',
      'vector + binary index, rerank ×8',
    ])
    const [plain, half, binary2] = report.options
    // The same corpus: the same heap; the quantized indexes are smaller.
    expect(half.bytes.heap).toBe(plain.bytes.heap)
    expect(half.bytes.hnsw).toBeLessThan(plain.bytes.hnsw)
    expect(binary2.bytes.hnsw).toBeLessThan(half.bytes.hnsw)
    for (const o of report.options) {
      expect(o.build.indexes).toBe(2)
      expect(o.classes.map((k: { cls: string }) => k.cls).sort()).toEqual(['medium', 'small'])
      // Small tenants have no index: every option answers them exactly.
      expect(o.classes.find((k: { cls: string }) => k.cls === 'small').recallAt10).toBe(1)
    }
    expect(report.cheapest.map((x: { cls: string }) => x.cls).sort()).toEqual(['medium', 'small'])
    expect(readFileSync(plot, 'utf8').match(/aria-roledescription="point"/g)?.length).toBe(8)
    const { rows } = await sql<{ present: boolean }>`select to_regnamespace('pgscale_quantization') is not null as present`.execute(t.db)
    expect(rows[0]!.present).toBe(false)
  })
})
