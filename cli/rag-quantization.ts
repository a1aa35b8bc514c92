import { writeFileSync } from 'node:fs'
import { Command, InvalidArgumentError as CommanderInvalidArgument } from 'commander'
import { quantizationChart, renderQuantizationReport } from '../bench/rag/quantization/render-quantization.js'
import { QUANT_SCHEMA, runQuantizationBench, type QuantizationOption } from '../bench/rag/quantization/run-quantization-bench.js'
import { chartLibrary, renderChart } from '../bench/report/charts.js'
import type { Quantization, VectorType } from '../src/index.js'
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

interface QuantizationCliOptions extends CommonOptions {
  chunks: number
  tenantMix: string
  dim: number
  vectorType: VectorType[]
  quantization: Quantization[]
  rerank: number[]
  efSearch: number
  queries: number
  seed: string
  plot?: string
}

function listOf<T extends string>(name: string, allowed: readonly T[]) {
  return (value: string): T[] => {
    const list = value.split(',').map((v) => v.trim())
    for (const v of list)
      if (!allowed.includes(v as T)) throw new CommanderInvalidArgument(`${name}: "${v}" is not one of ${allowed.join(', ')}`)
    return list as T[]
  }
}

/**
 * The options to measure: every column type × quantization (a halfvec index on a halfvec column is
 * the plain halfvec option), binary once per re-rank factor.
 *
 * ### Examples
 * ```ts
 * quantizationOptions(['vector'], ['none', 'binary'], [2, 4]) // vector; vector+binary ×2; vector+binary ×4
 * ```
 */
export function quantizationOptions(types: VectorType[], quantizations: Quantization[], reranks: number[]): QuantizationOption[] {
  const options: QuantizationOption[] = []
  for (const vectorType of types) {
    for (const quantization of quantizations) {
      if (vectorType === 'halfvec' && quantization === 'halfvec') continue
      if (quantization === 'binary') for (const rerank of reranks) options.push({ vectorType, quantization, rerank })
      else options.push({ vectorType, quantization, rerank: 1 })
    }
  }
  return options
}

/** Builds the `rag-bench quantization` command (commander wiring only; the work is in bench/rag/quantization). */
export function ragQuantizationCommand(): Command {
  return addCommonOptions(
    new Command('rag-bench quantization')
      .description(
        'The memory/recall frontier: the same corpus stored as vector or halfvec, indexed as is, as halfvec or as bits (binary quantization with re-ranking), side by side — index size, build time, ingest rate, recall@10 against the exact scan on full vectors, p50/p95 per tenant class.',
      )
      .option('--chunks <n>', 'chunks in all', positiveInt('--chunks', 100_000_000), 100_000)
      .option('--tenant-mix <mix>', 'tenant sizes: NxSIZE groups joined by "+" or zipf:TENANTS[:EXPONENT]', '4x25000')
      .option('--dim <n>', 'dimensions', positiveInt('--dim', 4000), 384)
      .option('--vector-type <list>', 'column types: vector, halfvec', listOf('--vector-type', ['vector', 'halfvec'] as const), ['vector'])
      .option(
        '--quantization <list>',
        'index quantizations: none, halfvec, binary',
        listOf('--quantization', ['none', 'halfvec', 'binary'] as const),
        ['none', 'halfvec', 'binary'],
      )
      .option(
        '--rerank <list>',
        'binary: candidates per result re-ranked on the full vectors, ascending',
        ascendingIntList('--rerank', 100),
        [2, 4, 8],
      )
      .option('--ef-search <n>', 'hnsw.ef_search of the searches', positiveInt('--ef-search', 1000), 100)
      .option('--queries <n>', 'queries per tenant class', positiveInt('--queries', 100_000), 200)
      .option('--seed <s>', 'data seed', '42')
      .option('--plot <file>', 'write recall@10 against index size as SVG (Vega-Lite: npm install vega vega-lite)'),
    'local',
  )
}

/**
 * Runs `rag-bench quantization` with `argv` (after `quantization`); resolves to the exit code.
 *
 * ### Examples
 * ```ts
 * await ragQuantization(['--chunks', '20000', '--quantization', 'none,binary'])
 * ```
 */
export async function ragQuantization(argv: readonly string[]): Promise<number> {
  const program = ragQuantizationCommand()
  return runCli(program, argv, async (onInterrupt) => {
    const o = program.opts<QuantizationCliOptions>()
    const tenants = tenantsOption(o.tenantMix, o.chunks)
    if (o.plot) await chartLibrary()
    const log = (line: string) => process.stderr.write(`[rag-bench quantization] ${line}\n`)
    const provisioned = await provisionFor(o, log)
    dropSchemaOnInterrupt(onInterrupt, provisioned, QUANT_SCHEMA, o.keep)
    try {
      const report = await runQuantizationBench(
        provisioned.db,
        provisioned.info,
        {
          tenants,
          mixLabel: o.tenantMix,
          dim: o.dim,
          seed: o.seed,
          options: quantizationOptions(o.vectorType, o.quantization, o.rerank),
          efSearch: o.efSearch,
          queries: o.queries,
          keep: Boolean(o.keep),
        },
        log,
      )
      if (o.json !== '-') console.log(renderQuantizationReport(report))
      writeJson(o.json, report)
      if (o.plot) writeFileSync(o.plot, await renderChart(quantizationChart(report)))
    } finally {
      await provisioned.stop()
    }
  })
}
