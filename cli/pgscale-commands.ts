import {
  configRollups,
  doctorAll,
  exitCodeOf,
  opsRollups,
  opsStores,
  PgVectorStore,
  recallCheck,
  recordedObjects,
  withStores,
  type Database,
  type Finding,
  type PgscaleConfig,
} from '../src/index.js'
import type { OnInterrupt } from './common.js'

/** What a command's runner gets besides the database and the config. */
export interface CommandContext {
  /** Progress, to stderr. */
  log: (line: string) => void
  /** The human result: stdout, or stderr when the JSON goes to stdout (`--json -`). */
  print: (line: string) => void
  onInterrupt: OnInterrupt
}

/** What a runner returns: the JSON report and the exit code. */
export interface CommandOutcome {
  report: unknown
  exitCode: number
}

/** A command's options, as commander parsed them. */
export type Options = Record<string, unknown>

/** Where the stores or rollups came from, for a "nothing to do" line. */
export function sourceOf(config: PgscaleConfig, what: 'stores' | 'rollups'): string {
  return config[what] ? 'the config module declares none' : 'none is recorded in pgscale_object_version and no config module was found'
}

/** Prints each finding, then a count (or "nothing to do" with the reason when there is none). */
export function printFindings(ctx: CommandContext, findings: readonly Finding[], nothing: string): void {
  for (const f of findings) {
    ctx.print(`${f.level.padEnd(4)}  ${f.check.padEnd(20)}  ${f.object}: ${f.detail}`)
    if (f.fix) ctx.print(`      fix: ${f.fix}`)
  }
  const count = (level: Finding['level']) => findings.filter((f) => f.level === level).length
  if (!findings.length) ctx.print(`nothing to do: ${nothing}`)
  else ctx.print(`${findings.length} finding(s): ${count('fail')} fail, ${count('warn')} warn, ${count('ok')} ok`)
}

/** `pgscale migrate`: runs (or with `--print` writes as SQL) the config's stores' and rollups' migrations. */
export async function runMigrate(db: Database, config: PgscaleConfig, options: Options, ctx: CommandContext): Promise<CommandOutcome> {
  const runtimeRole = (options.runtimeRole as string | undefined) ?? config.runtimeRole
  const stores = config.stores ?? []
  const rollups = configRollups(config)
  const done: string[] = []
  const sql = (text: string) => process.stdout.write(`${text}\n`)
  for (const store of stores) {
    const name = store.table ?? 'rag_chunks'
    if (options.print) sql(await PgVectorStore.migrationSql(store, { runtimeRole }))
    else {
      ctx.log(`migrate: store ${name}`)
      await db.transaction(async (trx) => PgVectorStore.migration(store, { runtimeRole }).up(trx))
    }
    done.push(`store ${name}`)
  }
  for (const { rollup, track } of rollups) {
    const name = rollup.parts.target.name
    if (options.print) sql(await rollup.migrationSql(db, { runtimeRole, track }))
    else {
      ctx.log(`migrate: rollup ${name}${track ? ' (tracked)' : ''}`)
      await db.transaction(async (trx) => {
        await rollup.parts.target.migration({ runtimeRole }).up(trx)
        // The levels before the tracking (which checks that they exist), each filled from the rollup table when new.
        for (const level of rollup.parts.levels ?? []) await level.migration({ runtimeRole }).up(trx)
        if (track) await rollup.trackingMigration({ runtimeRole }).up(trx)
      })
    }
    done.push(`rollup ${name}`)
  }
  if (options.print) ctx.log(`printed: ${done.join(', ')}`)
  else ctx.print(`migrated: ${done.join(', ')}`)
  return { report: { migrated: options.print ? [] : done, printed: options.print ? done : [] }, exitCode: 0 }
}

/** `pgscale optimize`: tiers and recall tuning of each store, with a line per store. */
export async function runOptimize(db: Database, config: PgscaleConfig, options: Options, ctx: CommandContext): Promise<CommandOutcome> {
  const results: Array<{ store: string; seconds: number; built: number; tuned: number; notes: string[] }> = []
  const configs = await opsStores(db, config, options.store as string | undefined)
  if (!configs.length) ctx.print(`nothing to do: no store (${sourceOf(config, 'stores')})`)
  await withStores(db, configs, async (store) => {
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
    ctx.print(
      `${store.config.qualified}: ${result.built.length} index(es) built, ${result.tuning.tenants.length} tenant(s) tuned in ${seconds.toFixed(1)} s`,
    )
    for (const note of result.notes) ctx.print(`  ${note}`)
  })
  return { report: { stores: results }, exitCode: 0 }
}

/** `pgscale recall`: the recall monitor judged per tenant; exit 1 below target or stale. */
export async function runRecall(db: Database, config: PgscaleConfig, options: Options, ctx: CommandContext): Promise<CommandOutcome> {
  const findings: Finding[] = []
  const configs = await opsStores(db, config, options.store as string | undefined)
  await withStores(db, configs, async (store) => {
    ctx.log(`recall: ${store.config.qualified} …`)
    findings.push(
      ...(await recallCheck(store, { maxAgeDays: options.maxAgeDays as number, targetRecall: config.optimize?.targetRecall ?? undefined })),
    )
  })
  const nothing = configs.length
    ? `${configs.length} store(s), no tenant with chunks or a recall figure yet`
    : `no store (${sourceOf(config, 'stores')})`
  printFindings(ctx, findings, nothing)
  return { report: { stores: configs.length, findings }, exitCode: exitCodeOf(findings) }
}

/**
 * `pgscale doctor`: every recorded object whose tables are gone, and the health of each store and
 * rollup that is there; one that cannot be opened is a finding, never the end of the run. Exit 1
 * on any warning or failure.
 */
export async function runDoctor(db: Database, config: PgscaleConfig, options: Options, ctx: CommandContext): Promise<CommandOutcome> {
  const checks = { ownIndexAbove: config.optimize?.ownIndexAbove, maxBacklogSeconds: options.maxBacklogSeconds as number }
  const only = options.store as string | undefined
  const records = await recordedObjects(db).catch((err: unknown) => err as Error)
  const findings: Finding[] = []
  if (records instanceof Error)
    findings.push({ level: 'fail', object: 'pgscale_object_version', check: 'records', detail: `cannot be read: ${records.message}` })
  const targets = {
    stores: await opsStores(db, config, only),
    rollups: await opsRollups(db, config),
    records: records instanceof Error ? [] : records,
  }
  findings.push(...(await doctorAll(db, targets, checks, ctx.log)))
  const nothing = `no store, rollup or record (${sourceOf(config, 'stores')})`
  printFindings(ctx, findings, nothing)
  return { report: { findings }, exitCode: exitCodeOf(findings) }
}
