import { Command, InvalidArgumentError as CommanderInvalidArgument } from 'commander'
import { parseMix, type LoadOperation } from '../bench/rag/load/ladder-analysis.js'
import { LOAD_SHAPE_NAMES, LOAD_SHAPES, type LoadShapeName } from '../bench/rag/load/load-shapes.js'
import { writeFileSync } from 'node:fs'
import { ladderChart } from '../bench/rag/load/report/ladder-chart.js'
import { renderLoadReport } from '../bench/rag/load/report/render-load-report.js'
import { chartLibrary, renderChart } from '../bench/report/charts.js'
import { LOAD_SCHEMA, runLoadBench, type LoadBenchConfig } from '../bench/rag/load/run-load-bench.js'
import type { ReplicaBenchConfig } from '../bench/rag/load/replicas/replica-run.js'
import { provision, type ProvisionedDatabase } from '../src/index.js'
import { redactUrl } from '../src/bench-kit.js'
import {
  addCommonOptions,
  ascendingIntList,
  dropSchemaOnInterrupt,
  tenantsOption,
  positiveInt,
  provisionFor,
  runCli,
  writeJson,
  type CommonOptions,
} from './common.js'

interface LoadCliOptions extends CommonOptions {
  chunks: number
  tenantMix: string
  dim: number
  chunksPerDoc: number
  clients: number[]
  duration: number
  warmup: number
  mix: Record<LoadOperation, number>
  maxP95Ms: number
  seed: string
  soak?: number
  soakClients: number
  shape: LoadShapeName
  workers: number
  partitions: number
  spikeFactor: number
  spikeSeconds: number
  breakpointMaxClients: number
  soakMaxGrowth: number
  plot?: string
  replicas?: number
  pauseReplay: boolean
  stopReplica: boolean
  replicaWaitMs: number
  replicaMaxLagMs: number
  replicaTokens: boolean
}

function mixOption(value: string) {
  try {
    return parseMix(value)
  } catch (err) {
    throw new CommanderInvalidArgument((err as Error).message)
  }
}

function shapeOption(value: string): LoadShapeName {
  if (!(LOAD_SHAPE_NAMES as readonly string[]).includes(value))
    throw new CommanderInvalidArgument(`--shape must be one of ${LOAD_SHAPE_NAMES.join(', ')}`)
  return value as LoadShapeName
}

function partitionsOption(value: string): number {
  const n = Number(value)
  if (!Number.isInteger(n) || (n !== 0 && (n < 2 || n > 1024)))
    throw new CommanderInvalidArgument('--partitions must be 0 or an integer from 2 to 1024')
  return n
}

function nonNegativeInt(name: string) {
  return (value: string): number => {
    const n = Number(value)
    if (!/^\d+$/.test(value) || !Number.isSafeInteger(n)) throw new CommanderInvalidArgument(`${name} must be an integer ≥ 0`)
    return n
  }
}

function positiveNumber(name: string) {
  return (value: string): number => {
    const n = Number(value)
    if (!(n > 0) || !Number.isFinite(n)) throw new CommanderInvalidArgument(`${name} must be a positive number`)
    return n
  }
}

/** Builds the `rag-bench load` command (commander wiring only; the work is in bench/rag/load). */
export function ragLoadCommand(): Command {
  return addReplicaOptions(ragLoadBaseCommand())
}

function ragLoadBaseCommand(): Command {
  return addCommonOptions(
    new Command('rag-bench load')
      .description(
        'A ladder of concurrent clients on a seeded corpus: throughput and p50/p95/p99 per operation, errors and rejections apart, every search answer verified against its tenant, where it breaks and where it saturates.',
      )
      .option('--chunks <n>', 'chunks in all', positiveInt('--chunks', 100_000_000), 100_000)
      .option('--tenant-mix <mix>', 'tenant sizes: zipf:TENANTS[:EXPONENT] or NxSIZE groups joined by "+"', 'zipf:100')
      .option('--dim <n>', 'embedding dimensions', positiveInt('--dim', 2000), 384)
      .option(
        '--shape <shape>',
        `what to run: ${LOAD_SHAPE_NAMES.map((n) => `${n} (${LOAD_SHAPES[n].describe})`).join('; ')}`,
        shapeOption,
        'load',
      )
      .option(
        '--workers <n>',
        'worker threads the clients run on, each with its own pool (a step of N clients uses min(N, workers))',
        positiveInt('--workers', 64),
        4,
      )
      .option('--partitions <n>', 'hash partitions of the load table by tenant (0: one table)', partitionsOption, 0)
      .option(
        '--spike-factor <n>',
        'spike: the burst runs this many times the base (smallest --clients) clients',
        positiveInt('--spike-factor', 100),
        4,
      )
      .option('--spike-seconds <s>', 'spike: seconds of the burst (no warm-up)', positiveNumber('--spike-seconds'), 5)
      .option(
        '--breakpoint-max-clients <n>',
        'breakpoint: stop doubling past this many clients',
        positiveInt('--breakpoint-max-clients', 4096),
        256,
      )
      .option('--chunks-per-doc <n>', 'chunks per document (and per replacement)', positiveInt('--chunks-per-doc', 1000), 20)
      .option('--clients <list>', 'concurrent clients per step, ascending', ascendingIntList('--clients', 1000), [1, 2, 4, 8, 16, 32])
      .option('--duration <s>', 'measured seconds per step', positiveNumber('--duration'), 15)
      .option('--warmup <s>', 'warm-up seconds before each step (not counted)', positiveNumber('--warmup'), 3)
      .option('--mix <weights>', 'operation weights', mixOption, parseMix('search=70,filtered=10,hybrid=10,replace=8,delete=2'))
      .option('--max-p95-ms <ms>', 'a step breaks when its read p95 passes this (or errors pass 1%)', positiveNumber('--max-p95-ms'), 50)
      .option('--seed <s>', 'data seed', '42')
      .option(
        '--soak <minutes>',
        'hold one step this long and check the client for memory growth (after the shape; the length of --shape soak, default 10)',
        positiveNumber('--soak'),
      )
      .option('--soak-clients <n>', 'clients of the soak step', positiveInt('--soak-clients', 1000), 8)
      .option('--plot <file>', 'write throughput and read p95 against clients as SVG (Vega-Lite: npm install vega vega-lite)')
      .option(
        '--soak-max-growth <mb>',
        'the soak fails when RSS grows faster than this many MB per hour',
        positiveNumber('--soak-max-growth'),
        50,
      ),
    'local',
  )
}

/** The `--replicas` options (a separate step: the command's chain stays readable). */
function addReplicaOptions(command: Command): Command {
  return command
    .option(
      '--replicas <n>',
      'read replicas: the ladder side by side on the primary alone and through 1..N streaming standbys (--db local starts them), every answer checked for read-your-writes; before it a routing probe, after it searches only per arm, a lagging step (replay paused on every standby) and a stopped standby (--shape load only)',
      positiveInt('--replicas', 8),
    )
    .option('--no-pause-replay', 'with --replicas: no lagging step (replay paused on every standby mid-step)')
    .option('--no-stop-replica', 'with --replicas: no step with replica 1 stopped and restarted')
    .option(
      '--replica-wait-ms <ms>',
      "with --replicas: how long a read waits for a replica to replay its tenant's writes before the primary",
      nonNegativeInt('--replica-wait-ms'),
      200,
    )
    .option(
      '--replica-max-lag-ms <ms>',
      'with --replicas: a replica lagging more than this serves no read',
      nonNegativeInt('--replica-max-lag-ms'),
      10_000,
    )
    .option(
      '--no-replica-tokens',
      'with --replicas: do not carry writes across client threads (shows what the verifier catches: stale reads)',
    )
}

/** The replica part of the config, or a usage error (exit 2) where `--replicas` cannot run. */
function replicaConfig(o: LoadCliOptions): ReplicaBenchConfig | undefined {
  if (o.replicas === undefined) return undefined
  if (o.pg || o.db !== 'local' || o.citusWorkers !== undefined || o.shape !== 'load' || o.soak !== undefined)
    throw Object.assign(
      new Error(
        '--replicas needs --db local (the local provider starts the primary and its streaming standbys) and --shape load, without --pg, --citus-workers or --soak',
      ),
      {
        exitCode: 2,
      },
    )
  return {
    count: o.replicas,
    pauseReplay: o.pauseReplay,
    stopReplica: o.stopReplica,
    tokens: o.replicaTokens,
    options: { waitMs: o.replicaWaitMs, maxLagMs: o.replicaMaxLagMs },
  }
}

/** The local provider with `count` streaming standbys; says where it runs (stderr). */
async function provisionWithStandbys(count: number, log: (line: string) => void): Promise<ProvisionedDatabase> {
  const provisioned = await provision({ provider: 'local', standbys: count })
  const { info } = provisioned
  log(
    `running on ${info.provider} (${redactUrl(provisioned.url ?? '')}) with ${provisioned.standbys?.length ?? 0} streaming standby(s): PostgreSQL ${info.serverVersion}, pgvector ${info.pgvectorVersion}`,
  )
  return provisioned
}

/**
 * Runs `rag-bench load` with `argv` (after `load`); resolves to the exit code: 1 when a row was
 * wrong, the smoke check failed or the soak grew past its bound.
 *
 * ### Examples
 * ```ts
 * await ragLoad(['--chunks', '20000', '--clients', '1,2', '--duration', '5'])
 * ```
 */
export async function ragLoad(argv: readonly string[]): Promise<number> {
  const program = ragLoadCommand()
  return runCli(program, argv, async (onInterrupt) => {
    const o = program.opts<LoadCliOptions>()
    const tenants = tenantsOption(o.tenantMix, o.chunks)
    const config: LoadBenchConfig = {
      tenants,
      mixLabel: o.tenantMix,
      chunks: tenants.reduce((s, t) => s + t.chunks, 0),
      dim: o.dim,
      chunksPerDoc: o.chunksPerDoc,
      partitions: o.partitions,
      shape: o.shape,
      clients: o.clients,
      workers: o.workers,
      spikeFactor: o.spikeFactor,
      spikeSeconds: o.spikeSeconds,
      breakpointMaxClients: o.breakpointMaxClients,
      seconds: o.duration,
      warmupSeconds: o.warmup,
      mix: o.mix,
      maxP95Ms: o.maxP95Ms,
      seed: o.seed,
      soakMinutes: o.soak,
      soakClients: o.soakClients,
      soakMaxGrowthMbPerHour: o.soakMaxGrowth,
      keep: Boolean(o.keep),
      replicas: replicaConfig(o),
    }
    if (o.plot) await chartLibrary()
    const log = (line: string) => process.stderr.write(`[rag-bench load] ${line}\n`)
    const provisioned = config.replicas ? await provisionWithStandbys(config.replicas.count, log) : await provisionFor(o, log)
    dropSchemaOnInterrupt(onInterrupt, provisioned, LOAD_SCHEMA, config.keep)
    try {
      const report = await runLoadBench(provisioned, config, log)
      if (o.json !== '-') console.log(renderLoadReport(report))
      writeJson(o.json, report)
      if (o.plot) writeFileSync(o.plot, await renderChart(ladderChart(report)))
      const failed = report.isolation.wrongRows > 0 || !report.smoke.passed || report.soak?.passed === false
      return failed ? 1 : 0
    } finally {
      await provisioned.stop()
    }
  })
}

// Also runnable on its own: `npx tsx cli/rag-load.ts --help` (the same command as `rag-bench load`).
if (import.meta.url === `file://${process.argv[1]}`) {
  process.exitCode = await ragLoad(process.argv.slice(2))
}
