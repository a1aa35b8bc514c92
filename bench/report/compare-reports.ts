/**
 * `rag-bench compare` / `rollup-bench compare`: two JSON reports of the same bench (the base
 * commit's and HEAD's, run on the same runner) matched figure by figure. Latencies are the
 * percentiles (`p50`/`p95`/`p99`, `p95Ms`, `sourceMs.p50`…) and client CPU per call (`…Micros`);
 * rates are `…PerSecond` and `throughput`. A latency that grew past `maxRatio`, or a rate that fell
 * below `1/maxRatio`, is a regression; latencies under `minMs` on both sides are noise and ignored.
 */

/** One compared figure. */
export interface ComparedFigure {
  key: string
  kind: 'latency' | 'rate'
  base: number
  head: number
  /** head / base. */
  ratio: number
  verdict: 'ok' | 'regressed' | 'improved' | 'noise'
}

/** The comparison of two reports. */
export interface ReportComparison {
  maxRatio: number
  minMs: number
  figures: ComparedFigure[]
  regressions: ComparedFigure[]
  /** Figures only one report has. */
  onlyInBase: string[]
  onlyInHead: string[]
}

/** The two reports cannot be compared (another bench, other sizes): exit code 2. */
export class ReportMismatchError extends Error {
  readonly exitCode = 2
}

const SKIPPED = new Set(['machine', 'server', 'method', 'config', 'warnings', 'notes', 'findings', 'peers'])
const ID_FIELDS = ['label', 'name', 'clients', 'cls', 'tenantId', 'id', 'kind', 'field']

/**
 * The figures of a report by key (`filters[equality 10%].strategies.pgscale (auto).p50Ms`): array
 * elements are keyed by their label, name or clients where they have one, else by position.
 *
 * ### Examples
 * ```ts
 * figuresOf({ steps: [{ clients: 1, readP95Ms: 3.2, throughput: 410 }] })
 * // Map { 'steps[1].readP95Ms' => { kind: 'latency', value: 3.2 }, 'steps[1].throughput' => { kind: 'rate', value: 410 } }
 * ```
 */
export function figuresOf(report: unknown): Map<string, { kind: ComparedFigure['kind']; value: number; ms: number }> {
  const out = new Map<string, { kind: ComparedFigure['kind']; value: number; ms: number }>()
  const walk = (value: unknown, path: string, inMs: boolean) => {
    if (Array.isArray(value)) {
      value.forEach((item, i) => {
        const id =
          item && typeof item === 'object'
            ? ID_FIELDS.map((f) => (item as Record<string, unknown>)[f]).find((v) => typeof v === 'string' || typeof v === 'number')
            : undefined
        walk(item, `${path}[${id ?? i}]`, inMs)
      })
      return
    }
    if (value === null || typeof value !== 'object') return
    for (const [key, item] of Object.entries(value)) {
      if (path === '' && SKIPPED.has(key)) continue
      const here = path ? `${path}.${key}` : key
      if (typeof item === 'number' && Number.isFinite(item)) {
        const kind = classify(key, inMs)
        if (kind) out.set(here, { kind, value: item, ms: key.endsWith('Micros') ? item / 1000 : item })
      } else {
        walk(item, here, inMs || key.endsWith('Ms'))
      }
    }
  }
  walk(report, '', false)
  return out
}

function classify(key: string, inMs: boolean): ComparedFigure['kind'] | undefined {
  if (/^p(50|95|99)$/.test(key) && inMs) return 'latency'
  if (/p(50|95|99)Ms$/i.test(key) || key.endsWith('Micros')) return 'latency'
  if (/perSecond$/i.test(key) || key === 'throughput') return 'rate'
  return undefined
}

/** What must be equal for two reports to be compared: their `config` (sizes, seeds, options), else their top-level scalars. */
function sizesOf(report: Record<string, unknown>): Record<string, unknown> {
  if (report.config && typeof report.config === 'object') return report.config as Record<string, unknown>
  return Object.fromEntries(Object.entries(report).filter(([, v]) => typeof v === 'string' || typeof v === 'number'))
}

/**
 * Compares two reports; throws {@link ReportMismatchError} when they are of different benches or sizes.
 *
 * ### Examples
 * ```ts
 * const { regressions } = compareReports(base, head, { maxRatio: 2, minMs: 1 })
 * process.exitCode = regressions.length ? 1 : 0
 * ```
 */
export function compareReports(base: unknown, head: unknown, options: { maxRatio: number; minMs: number }): ReportComparison {
  for (const [name, r] of [
    ['base', base],
    ['head', head],
  ] as const) {
    if (r === null || typeof r !== 'object' || Array.isArray(r)) throw new ReportMismatchError(`the ${name} report is not a JSON object`)
  }
  const [b, h] = [sizesOf(base as Record<string, unknown>), sizesOf(head as Record<string, unknown>)]
  const differing = [...new Set([...Object.keys(b), ...Object.keys(h)])].filter((k) => JSON.stringify(b[k]) !== JSON.stringify(h[k]))
  if (differing.length) {
    throw new ReportMismatchError(
      `the reports were run with different sizes or options, so their figures do not compare: ${differing
        .slice(0, 6)
        .map((k) => `${k} ${JSON.stringify(b[k]) ?? '(absent)'} vs ${JSON.stringify(h[k]) ?? '(absent)'}`)
        .join('; ')}`,
    )
  }
  const [fb, fh] = [figuresOf(base), figuresOf(head)]
  const common = [...fb.keys()].filter((k) => fh.has(k))
  if (common.length === 0 || common.length < 0.5 * Math.max(fb.size, fh.size)) {
    throw new ReportMismatchError(
      `the reports have different shapes (${common.length} figures in common of ${fb.size} and ${fh.size}): are they of the same bench?`,
    )
  }
  const figures = common.map((key): ComparedFigure => {
    const x = fb.get(key)!
    const y = fh.get(key)!
    const ratio = x.value === 0 ? (y.value === 0 ? 1 : Infinity) : y.value / x.value
    let verdict: ComparedFigure['verdict']
    if (x.kind === 'latency' && Math.max(x.ms, y.ms) < options.minMs) verdict = 'noise'
    else if (x.kind === 'latency') verdict = ratio > options.maxRatio ? 'regressed' : ratio < 1 / options.maxRatio ? 'improved' : 'ok'
    else verdict = ratio < 1 / options.maxRatio ? 'regressed' : ratio > options.maxRatio ? 'improved' : 'ok'
    return { key, kind: x.kind, base: x.value, head: y.value, ratio, verdict }
  })
  return {
    ...options,
    figures,
    regressions: figures.filter((f) => f.verdict === 'regressed'),
    onlyInBase: [...fb.keys()].filter((k) => !fh.has(k)),
    onlyInHead: [...fh.keys()].filter((k) => !fb.has(k)),
  }
}

/**
 * The comparison as a table: every figure with base, head and ratio, regressions marked, then the verdict.
 *
 * ### Examples
 * ```ts
 * console.log(renderComparison(compareReports(base, head, { maxRatio: 2, minMs: 1 })))
 * ```
 */
export function renderComparison(c: ReportComparison): string {
  const width = Math.min(80, Math.max(10, ...c.figures.map((f) => f.key.length)))
  const lines = [`${'figure'.padEnd(width)}  kind     ${'base'.padStart(10)} ${'head'.padStart(10)}  ratio  verdict`]
  for (const f of c.figures) {
    const key = f.key.length > width ? `…${f.key.slice(-(width - 1))}` : f.key.padEnd(width)
    lines.push(
      `${key}  ${f.kind.padEnd(7)}  ${f.base.toFixed(2).padStart(10)} ${f.head.toFixed(2).padStart(10)} ${f.ratio.toFixed(2).padStart(6)}  ${f.verdict === 'regressed' ? 'REGRESSED' : f.verdict}`,
    )
  }
  if (c.onlyInBase.length || c.onlyInHead.length) {
    lines.push('', `only in base: ${c.onlyInBase.length}, only in head: ${c.onlyInHead.length} (not compared)`)
  }
  lines.push(
    '',
    c.regressions.length
      ? `${c.regressions.length} regression(s): a latency above ${c.maxRatio}× or a rate below 1/${c.maxRatio} of the base (latencies under ${c.minMs} ms ignored)`
      : `no regression: every latency within ${c.maxRatio}× and every rate above 1/${c.maxRatio} of the base (latencies under ${c.minMs} ms ignored)`,
  )
  return lines.join('\n')
}
