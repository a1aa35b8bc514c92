import { sql } from 'kysely'
import { connect, type Database, type ProvisionedDatabase } from '../../../src/index.js'
import { drainLog } from '../track/drain-log.js'
import { measureDrainRate, measureStaleness } from '../track/freshness.js'
import { pgIvm, pgIvmSessionOptions, type PgIvm } from '../track/pg-ivm.js'
import { measureDistinctError, measureFreshReads } from '../track/read-costs.js'
import { measureWriteOverhead, pgIvmMode } from '../track/write-overhead.js'
import { END, SCHEMA, SOURCE, TARGET, type RollupRun } from '../rollup-run.js'
import type { TrackOptions, TrackReport } from '../track/track-report.js'

/**
 * Phase `--track`: the rollup's tracking measured on the seeded source — write overhead with and
 * without it (and with a pg_ivm IMMV when the server has pg_ivm), drain rate, staleness under a
 * paced write load with one drainer, fresh reads against plain ones, and approxCountDistinct's
 * error against exact counts (where the server has hll). Leaves the source as it found it.
 *
 * ### Examples
 * ```ts
 * report.track = await trackPhase(provisioned, run, { rows: 40_000, rounds: 5, seconds: 20, writesPerSecond: 100 }, console.error)
 * ```
 */
export async function trackPhase(
  provisioned: ProvisionedDatabase,
  run: RollupRun,
  options: TrackOptions,
  log: (line: string) => void,
): Promise<TrackReport> {
  const { db, rollup, o } = run
  const ivm = provisioned.url ? await pgIvm(db, SOURCE, o.zone) : null
  log(
    ivm
      ? `pg_ivm ${ivm.version} found: measured beside tracking`
      : 'pg_ivm not available on this server: tracking against plain writes only',
  )
  // Writers on a pool of their own (pg_ivm loaded in every session, whatever the mode); on PGlite one connection.
  const writers = provisioned.url
    ? await connect({ connectionString: provisioned.url, ...pgIvmSessionOptions(Boolean(ivm)) }, { maxConnections: 6 })
    : db
  try {
    const writes = await trackWrites(run, writers, ivm, options, log)
    await rollup.track(db)
    const { drain, staleness, freshReads } = await trackFreshness(run, writers, options, log)
    await rollup.untrack(db)
    const { rows: hll } = await sql<{ n: number }>`select count(*)::int as n from pg_available_extensions where name = 'hll'`.execute(db)
    log(hll[0]!.n ? 'track: approxCountDistinct against exact counts' : 'track: no hll on this server: approxCountDistinct not measured')
    const distinct = hll[0]!.n
      ? await measureDistinctError(db, {
          source: SOURCE,
          target: `${SCHEMA}.expenses_distinct`,
          zone: o.zone,
          tenants: o.tenants,
          since: run.since,
          until: run.until,
        })
      : null
    return {
      options,
      pgIvm: ivm?.version ?? null,
      writes,
      drain,
      staleness,
      freshReads,
      distinct,
      method:
        'writes: every round runs each mode once (order rotating), the same statements in each; times are wall times of the whole write (four writers: all four at once, each a quarter of the rows, its own tenant); ratios are medians over rounds of mode ÷ plain in the same round. ' +
        'Tracking is switched by track()/untrack() and its log drained between rounds; the pg_ivm IMMV is created before its round and dropped after (not timed). ' +
        'Staleness: first look after the commit at which the key is gone from the log (an upper bound).',
    }
  } finally {
    if (writers !== db) await writers.close()
    if (ivm) await ivm.drop(db)
  }
}

const tenantOf = (run: RollupRun) => (n: number) => Math.min(n, Math.max(1, run.o.tenants))

/** The write overhead in each mode: plain, tracked (track/untrack around the round), pg_ivm. */
async function trackWrites(run: RollupRun, writers: Database, ivm: PgIvm | null, options: TrackOptions, log: (line: string) => void) {
  const { db, rollup } = run
  const tenant = tenantOf(run)
  return measureWriteOverhead({
    writers,
    source: SOURCE,
    end: END,
    rows: options.rows,
    rounds: options.rounds,
    oneTenant: tenant(2),
    fourTenants: [tenant(3), tenant(4), tenant(5), tenant(6)],
    singleRowInserts: 200,
    modes: {
      plain: { on: async () => {}, off: async () => {} },
      tracked: { on: () => rollup.track(db), off: async () => (await drainLog(run.rollup, run.db), await rollup.untrack(db)) },
      pgIvm: pgIvmMode(ivm, db),
    },
    onRound: (round, mode) => log(`track: write round ${round + 1}/${options.rounds}, ${mode}`),
  })
}

/** With tracking on: drain rate, staleness under a paced load with one drainer, fresh reads. */
async function trackFreshness(run: RollupRun, writers: Database, options: TrackOptions, log: (line: string) => void) {
  const { db, rollup, o } = run
  const tenant = tenantOf(run)
  log('track: drain rate')
  const drain = [
    await measureDrainRate(db, rollup, SOURCE, { label: 'the big tenant, every month', tenants: [1, 1], zone: o.zone }),
    await measureDrainRate(db, rollup, SOURCE, { label: 'typical tenants, every month', tenants: [tenant(2), tenant(301)], zone: o.zone }),
  ]
  log(`track: staleness, ${options.seconds} s of writes at ${options.writesPerSecond}/s with one drainer`)
  const staleness = await measureStaleness({
    writer: writers,
    drainer: db,
    rollup,
    source: SOURCE,
    log: `${TARGET}_dirty`,
    tenants: o.tenants,
    end: END,
    zone: o.zone,
    seconds: options.seconds,
    writesPerSecond: options.writesPerSecond,
    drainIntervalMs: 100,
  })
  log('track: fresh reads')
  const freshReads = [
    ...(await measureFreshReads(db, rollup, SOURCE, { tenantId: 1, end: run.until, zone: o.zone, reps: o.reps })),
    ...(await measureFreshReads(db, rollup, SOURCE, { tenantId: tenant(2), end: run.until, zone: o.zone, reps: o.reps })),
  ]
  return { drain, staleness, freshReads }
}
