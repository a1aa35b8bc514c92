import {
  configRollups,
  doctorRollup,
  doctorStore,
  exitCodeOf,
  opsRollups,
  opsStores,
  PgVectorStore,
  recallCheck,
  withStores,
  type Database,
  type Finding,
  type PgscaleConfig,
} from '../src/index.js'
import type { OnInterrupt } from './common.js'

/** What a command's runner gets besides the database and the config. */
export interface CommandContext {
  log: (line: string) => void
  onInterrupt: OnInterrupt
}

/** What a runner returns: the JSON report and the exit code. */
export interface CommandOutcome {
  report: unknown
  exitCode: number
}

type Options = Record<string, unknown>

const print = (line: string) => process.stdout.write(`${line}\n`)

function printFindings(findings: readonly Finding[]): void {
  for (const f of findings) print(`${f.level.padEnd(4)}  ${f.check.padEnd(20)}  ${f.object}: ${f.detail}`)
}

/** `pgscale migrate`: runs (or with `--print` writes as SQL) the config's stores' and rollups' migrations. */
export async function runMigrate(db: Database, config: PgscaleConfig, options: Options, ctx: CommandContext): Promise<CommandOutcome> {
  const runtimeRole = (options.runtimeRole as string | undefined) ?? config.runtimeRole
  const stores = config.stores ?? []
  const rollups = configRollups(config)
  if (!stores.length && !rollups.length)
    throw Object.assign(new Error('migrate needs a config module with stores or rollups (--config)'), { exitCode: 2 })
  const done: string[] = []
  for (const store of stores) {
    const name = store.table ?? 'rag_chunks'
    if (options.print) print(await PgVectorStore.migrationSql(store, { runtimeRole }))
    else {
      ctx.log(`migrate: store ${name}`)
      await db.transaction(async (trx) => PgVectorStore.migration(store, { runtimeRole }).up(trx))
    }
    done.push(`store ${name}`)
  }
  for (const { rollup, track } of rollups) {
    const name = rollup.parts.target.name
    if (options.print) print(await rollup.migrationSql(db, { runtimeRole, track }))
    else {
      ctx.log(`migrate: rollup ${name}${track ? ' (tracked)' : ''}`)
      await db.transaction(async (trx) => {
        await rollup.parts.target.migration({ runtimeRole }).up(trx)
        if (track) await rollup.trackingMigration({ runtimeRole }).up(trx)
      })
    }
    done.push(`rollup ${name}`)
  }
  if (!options.print) print(`migrated: ${done.join(', ')}`)
  return { report: { migrated: options.print ? [] : done, printed: options.print ? done : [] }, exitCode: 0 }
}

/** `pgscale optimize`: tiers and recall tuning of each store, with a line per store. */
export async function runOptimize(db: Database, config: PgscaleConfig, options: Options, ctx: CommandContext): Promise<CommandOutcome> {
  const results: Array<{ store: string; seconds: number; built: number; tuned: number; notes: string[] }> = []
  await withStores(db, await opsStores(db, config, options.store as string | undefined), async (store) => {
    const started = performance.now()
    ctx.log(`optimize: ${store.config.qualified} …`)
    const result = await store.optimize({ ...config.optimize, ...(options.concurrently ? { concurrently: true } : {}) })
    const seconds = (performance.now() - started) / 1000
    results.push({
      store: store.config.qualified,
      seconds,
      built: result.built.length,
      tuned: result.tuning.tenants.length,
      notes: result.notes,
    })
    print(
      `${store.config.qualified}: ${result.built.length} index(es) built, ${result.tuning.tenants.length} tenant(s) tuned in ${seconds.toFixed(1)} s`,
    )
    for (const note of result.notes) print(`  ${note}`)
  })
  return { report: { stores: results }, exitCode: 0 }
}

/** `pgscale drain`: `--once` empties the logs; otherwise every rollup drains until SIGTERM/SIGINT, then exits 0. */
export async function runDrain(db: Database, config: PgscaleConfig, options: Options, ctx: CommandContext): Promise<CommandOutcome> {
  const rollups = await opsRollups(db, config, options.rollup as string | undefined)
  const limit = options.limit as number
  const counts: Record<string, number> = {}
  if (options.once) {
    for (const rollup of rollups) {
      let buckets = 0
      for (;;) {
        const done = await rollup.refreshDirty(db, { limit })
        buckets += done.buckets
        ctx.log(`drain: ${rollup.parts.target.name} ${buckets} bucket(s), ${done.remaining} log row(s) left`)
        if (done.remaining === 0 || done.buckets === 0) break
      }
      counts[rollup.parts.target.name] = buckets
    }
  } else {
    const stop = new AbortController()
    const onTerm = () => stop.abort()
    process.once('SIGTERM', onTerm)
    ctx.log(
      `drain: ${rollups.map((r) => r.parts.target.name).join(', ') || 'no tracked rollup'}; SIGTERM or SIGINT stops after the refresh in flight`,
    )
    const drained = Promise.all(rollups.map((r) => r.drain(db, { limit, intervalMs: options.interval as number, signal: stop.signal })))
    ctx.onInterrupt(async () => {
      stop.abort()
      await drained
    })
    const results = await drained.finally(() => process.off('SIGTERM', onTerm))
    rollups.forEach((r, i) => (counts[r.parts.target.name] = results[i]!.buckets))
  }
  for (const [name, buckets] of Object.entries(counts)) print(`${name}: ${buckets} bucket(s) refreshed`)
  return { report: { rollups: counts }, exitCode: 0 }
}

/** `pgscale recall`: the recall monitor judged per tenant; exit 1 below target or stale. */
export async function runRecall(db: Database, config: PgscaleConfig, options: Options): Promise<CommandOutcome> {
  const findings: Finding[] = []
  await withStores(db, await opsStores(db, config, options.store as string | undefined), async (store) => {
    findings.push(
      ...(await recallCheck(store, { maxAgeDays: options.maxAgeDays as number, targetRecall: config.optimize?.targetRecall ?? undefined })),
    )
  })
  printFindings(findings)
  return { report: { findings }, exitCode: exitCodeOf(findings) }
}

/** `pgscale doctor`: store and rollup health; exit 1 on any warning or failure. */
export async function runDoctor(db: Database, config: PgscaleConfig, options: Options, ctx: CommandContext): Promise<CommandOutcome> {
  const findings: Finding[] = []
  const checks = { ownIndexAbove: config.optimize?.ownIndexAbove, maxBacklogSeconds: options.maxBacklogSeconds as number }
  await withStores(db, await opsStores(db, config, options.store as string | undefined), async (store) => {
    ctx.log(`doctor: ${store.config.qualified} …`)
    findings.push(...(await doctorStore(db, store, checks)))
  })
  for (const rollup of await opsRollups(db, config)) findings.push(...(await doctorRollup(db, rollup, checks)))
  printFindings(findings)
  return { report: { findings }, exitCode: exitCodeOf(findings) }
}
