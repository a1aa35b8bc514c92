import fc from 'fast-check'
import { sql } from 'kysely'
import { afterAll, beforeAll, it } from 'vitest'
import { fleetTable, MonthlyRollup, PgVectorStore, rollupTable, type Database, type PgVectorStoreConfig } from '../../src/index.js'
import { describeUnless } from '../support/skip.js'
import { testTarget } from '../support/test-database.js'
import { storeCommands } from './commands.js'
import { FIXED_SEQUENCES, knownFailing } from './known-failing.js'
import { DIM, emptyModel, ZONE } from './model.js'
import { rollupCommands, SOURCE_DDL, sourceIndex } from './rollup-commands.js'
import type { Cmd, World } from './writes.js'

/**
 * The harness every mode runs: the schema (the store's table with a test trigger that refuses a
 * poisoned row, the rollup's tracked source, table and fleet level), fast-check's model-based run over seeded
 * command sequences, and the suite a mode file declares. A failure prints fast-check's seed, path
 * and the shrunk command sequence.
 *
 * Budget: `PGSCALE_CONFORMANCE_RUNS` sequences (default per mode, CI's) of up to
 * `PGSCALE_CONFORMANCE_COMMANDS` commands (default 40); `PGSCALE_CONFORMANCE_SEED` (and
 * `PGSCALE_CONFORMANCE_PATH`) replays a failure; `PGSCALE_CONFORMANCE_SHRINK=1` shrinks the
 * known-failing cases too (CI stops them at the first failure).
 */

/** Every store command kind (reads, then writes). */
export const READS = ['search', 'exactSearch', 'hybridSearch', 'find', 'count', 'getChunks', 'spaceRoundTrip'] as const
export const WRITES = [
  'replaceDocument',
  'deleteDocument',
  'upsertChunks',
  'bulkUpsert',
  'updateMetadata',
  'deleteWhere',
  'tenant.bulkIngest',
  'store.bulkIngest',
] as const
export const ROLLUP = [
  'sourceInsert',
  'sourceDelete',
  'refreshAt',
  'refreshDirty',
  'refreshFleet',
  'rollupRead',
  'fleetRead',
  'tenantLevelRead',
] as const

export const storeConfig = (isolation: 'none' | 'rls'): PgVectorStoreConfig => ({ table: 'conf_chunks', dimensions: DIM, isolation })

/**
 * The rollup of `conf_events` by category, with its fleet level `conf_fleet` (kept by deltas: sums
 * and counts), a deferred fleet level `conf_fleet_months` (months only: kept by the drain, declared
 * first so the views without groups read it) and its per-tenant level `conf_by_tenant` (tenant ×
 * month, the category dropped).
 */
export function confRollup(isolation: 'none' | 'rls') {
  const target = rollupTable('conf_monthly', { groupBy: { category: 'text' }, measures: { total: 'integer', count: 'integer' }, isolation })
  const fleet = fleetTable('conf_fleet', { of: target, groupBy: ['category'] })
  const months = fleetTable('conf_fleet_months', { of: target, groupBy: [], deferred: true })
  const byTenant = fleetTable('conf_by_tenant', { of: target, groupBy: [], perTenant: true })
  const rollup = new MonthlyRollup({
    source: 'conf_events',
    target,
    at: 'at',
    tenant: 'tenant_id',
    groupBy: ['category'],
    measures: { total: sql`sum(amount)`, count: sql`count(*)` },
    zone: ZONE,
    fleet: [months, fleet, byTenant],
  })
  return { target, fleet, months, byTenant, rollup }
}

/** Creates the store's and the rollup's objects as the owner; with a runtime role, through the migrations that grant it DML. */
export async function createSchema(owner: Database, isolation: 'none' | 'rls', runtimeRole?: string): Promise<MonthlyRollup> {
  const config = storeConfig(isolation)
  if (runtimeRole) await PgVectorStore.migration(config, { runtimeRole }).up(owner)
  // A second embedding space (the spaceRoundTrip command): its guard now checks every write of the store.
  const store = await PgVectorStore.open(owner, config)
  await store.addSpace({ name: 'mirror', dimensions: DIM }, runtimeRole ? { runtimeRole } : {})
  await store.close()
  await sql
    .raw(
      `create function conf_poison() returns trigger language plpgsql as $$
       begin if new.content = 'poison' then raise exception 'conformance: a poisoned row'; end if; return new; end $$`,
    )
    .execute(owner)
  await sql
    .raw(`create trigger conf_poison before insert or update on conf_chunks for each row execute function conf_poison()`)
    .execute(owner)
  await sql.raw(SOURCE_DDL).execute(owner)
  await sourceIndex.execute(owner)
  const { target, fleet, months, byTenant, rollup } = confRollup(isolation)
  if (runtimeRole) {
    await target.migration({ runtimeRole }).up(owner)
    await fleet.migration({ runtimeRole }).up(owner)
    await months.migration({ runtimeRole }).up(owner)
    await byTenant.migration({ runtimeRole }).up(owner)
    await rollup.trackingMigration({ runtimeRole }).up(owner)
    await sql.raw(`grant select, insert, update, delete on conf_events to ${runtimeRole}`).execute(owner)
  } else {
    await target.create(owner)
    await fleet.create(owner)
    await months.create(owner)
    await byTenant.create(owner)
    await rollup.track(owner)
  }
  return rollup
}

/** Empties the tables between sequences (the source first: its truncate trigger marks buckets). */
export async function truncateAll(owner: Database): Promise<void> {
  await sql`truncate conf_chunks, conf_chunks__mirror, conf_chunks_tenant_spaces, conf_events`.execute(owner)
  await sql`truncate conf_monthly, conf_monthly_dirty, conf_fleet, conf_fleet_months, conf_fleet_months_pending, conf_by_tenant`.execute(
    owner,
  )
}

const envInt = (name: string): number | undefined => (process.env[name] ? Number(process.env[name]) : undefined)

/** What one mode runs. */
export interface ModeSpec {
  /** The mode's name (in test names and `KNOWN_FAILING`). */
  name: string
  /** Command kinds of the main property (known-failing ones are taken out). */
  commands: readonly string[]
  /** Write kinds the wrappers (poisoned, killed, rolled back, in a transaction) wrap. */
  writes: readonly string[]
  /** Sequences in CI (PGSCALE_CONFORMANCE_RUNS overrides). */
  runs: number
  /** Why this mode does not run here (empty: it runs). */
  skip?: string
  /** Commands left out here, with why (printed). */
  leftOut?: { kinds: readonly string[]; reason: string }
}

const WEIGHTS: Record<string, number> = Object.fromEntries([
  ...WRITES.map((k) => [k, 3] as const),
  ...['find', 'count', 'getChunks', 'exactSearch', 'rollupRead', 'fleetRead', 'tenantLevelRead', 'sourceInsert', 'tokenRead', 'replay'].map(
    (k) => [k, 2] as const,
  ),
])

const COMMAND_TIMEOUT_MS = 30_000
class HungCommand extends Error {}
const hung = new WeakMap<World, string>()

/** Commands run per mode in this process (printed after each property). */
const tally = { commands: 0 }

function counted(cmd: Cmd): Cmd {
  return {
    kind: cmd.kind,
    check: (m) => cmd.check(m),
    run: async (m, w) => {
      tally.commands++
      // A command that hangs is a failure of its own (with its sequence), not a test timeout.
      let timer: NodeJS.Timeout | undefined
      const hung = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new HungCommand(`${cmd} did not finish in ${COMMAND_TIMEOUT_MS / 1000} s`)), COMMAND_TIMEOUT_MS)
      })
      try {
        await Promise.race([cmd.run(m, w), hung])
      } finally {
        clearTimeout(timer)
      }
    },
    toString: () => cmd.toString(),
  }
}

/** Runs the model-based property over `kinds` against the world; throws fast-check's report (seed, path, shrunk sequence). */
export async function runProperty(world: World, spec: ModeSpec, kinds: readonly string[], options: { shrink: boolean; runs?: number }) {
  const table = { ...storeCommands(spec.writes), ...rollupCommands }
  const arbs = kinds.flatMap((kind) => {
    const make = table[kind]
    if (!make) throw new Error(`conformance: no command ${kind}`)
    // fc.commands picks its arbitraries uniformly: writes and exact reads weigh more, so that a
    // write is usually followed by a read of its tenant within a sequence.
    return Array.from({ length: WEIGHTS[kind] ?? 1 }, () => make().map(counted))
  })
  const maxCommands = envInt('PGSCALE_CONFORMANCE_COMMANDS') ?? 40
  const seed = envInt('PGSCALE_CONFORMANCE_SEED')
  const path = process.env.PGSCALE_CONFORMANCE_PATH
  const numRuns = envInt('PGSCALE_CONFORMANCE_RUNS') ?? options.runs ?? spec.runs
  const before = tally.commands
  const started = performance.now()
  try {
    await fc.assert(
      fc.asyncProperty(fc.commands(arbs, { maxCommands, size: 'max' }), async (cmds) => {
        // A hung command still holds its connection: every later sequence fails at once, naming it.
        if (hung.has(world)) throw new Error(`a command hung in an earlier sequence: ${hung.get(world)}`)
        await world.reset()
        try {
          await fc.asyncModelRun(() => ({ model: emptyModel(), real: world }), cmds)
        } catch (e) {
          if (e instanceof HungCommand) {
            hung.set(world, `${e.message} in [${[...cmds].map(String).join(', ')}]`)
            console.log(`[conformance] ${spec.name}: ${hung.get(world)}`)
          }
          throw e
        }
      }),
      {
        numRuns,
        ...(seed !== undefined ? { seed } : {}),
        ...(path ? { path } : {}),
        endOnFailure: !options.shrink,
      },
    )
  } catch (e) {
    // Printed here too: an expected failure (a known defect's case) is not reported by Vitest.
    const cause = (e as { cause?: unknown }).cause
    console.log(
      `[conformance] ${spec.name} FAILED with ${kinds.join(' ')}:\n${String((e as Error).message)
        .split('\n')
        .slice(0, 5)
        .join('\n')}\n` + `cause: ${cause instanceof Error ? cause.message.split('\n').slice(0, 6).join('\n') : String(cause)}`,
    )
    throw e
  }
  console.log(
    `[conformance] ${spec.name}: ${numRuns} sequences, ${tally.commands - before} commands, ${Math.round(performance.now() - started)} ms (${kinds.join(' ')})`,
  )
}

/** Runs one fixed command sequence against the model (a known defect's reproduction). */
export async function runSequence(world: World, spec: ModeSpec, cmds: Cmd[]): Promise<void> {
  await world.reset()
  try {
    await fc.asyncModelRun(() => ({ model: emptyModel(), real: world }), cmds)
  } catch (e) {
    console.log(`[conformance] ${spec.name} FAILED the sequence [${cmds.map(String).join(', ')}]: ${(e as Error).message.split('\n')[0]}`)
    throw e
  }
}

/** How long a mode's property may run: CI's budget takes seconds; a long run on demand (PGSCALE_CONFORMANCE_RUNS) hours. */
const PROPERTY_TIMEOUT_MS = envInt('PGSCALE_CONFORMANCE_RUNS') === undefined ? 600_000 : 6 * 3_600_000

/**
 * Declares a mode's suite: the main property over its commands without the known-failing ones,
 * and one `it.fails` per known-failing command (the property with that command added must fail
 * until the defect is fixed; then the case fails, and its line in KNOWN_FAILING goes).
 */
export function modeSuite(spec: ModeSpec, open: () => Promise<World>, close: () => Promise<void> = async () => {}): void {
  const known = knownFailing(spec.name)
  const main = spec.commands.filter((k) => !known.some((f) => f.command === k))
  const shrink = process.env.PGSCALE_CONFORMANCE_SHRINK === '1'
  const citus = testTarget().citusWorkers ? 'no Citus mode yet: the source table and the rollup would need distributing (opt-in runs)' : ''
  const suite = describeUnless(spec.skip || citus)
  suite(`conformance: ${spec.name}`, () => {
    let world: World | undefined
    beforeAll(async () => {
      if (spec.leftOut?.kinds.length)
        console.warn(`[pgscale tests] conformance ${spec.name}: left out ${spec.leftOut.kinds.join(', ')}: ${spec.leftOut.reason}`)
      world = await open()
    }, 180_000)
    afterAll(close, 60_000)
    it(
      `random sequences of ${main.length} command kinds match the model`,
      () => runProperty(world!, spec, main, { shrink: true }),
      PROPERTY_TIMEOUT_MS,
    )
    for (const f of FIXED_SEQUENCES.filter((s) => s.mode === spec.name))
      it(`the fixed sequence of ${f.name}`, () => runSequence(world!, spec, f.sequence()), 60_000)
    for (const f of known)
      it.fails(
        `known defect (${f.defect}): with ${f.command} the model is violated — remove it from KNOWN_FAILING once fixed`,
        () =>
          f.sequence
            ? runSequence(world!, spec, f.sequence())
            : runProperty(world!, spec, [...(f.focus ?? main), f.command], { shrink, runs: f.runs ?? Math.max(spec.runs, 20) }),
        600_000,
      )
  })
}
