import type { LoadBenchReport } from '../run-load-bench.js'
import { replicaLines } from '../replicas/replica-report.js'

const pad = (s: string | number, n: number) => String(s).padStart(n)

/**
 * The human report of `rag-bench load`: the ladder per step and operation, the database's view,
 * the break and saturation points, the isolation line, the replicas (`--replicas`), warnings and the soak.
 *
 * ### Examples
 * ```ts
 * console.log(renderLoadReport(report))
 * ```
 */
export function renderLoadReport(r: LoadBenchReport): string {
  const c = r.config
  const lines = headerLines(r)
  for (const s of r.steps) {
    const o = s.operations
    const pair = (a: number, b: number) => `${a.toFixed(1)}/${b.toFixed(1)}`
    const errors = Object.values(o).reduce((n, x) => n + x.errors, 0)
    lines.push(
      [
        s.phase.padEnd(8),
        pad(s.clients, 7),
        pad(s.throughput.toFixed(0), 6),
        pad(s.readP95Ms.toFixed(1), 9),
        pad(`${o.search.p50Ms.toFixed(1)}/${o.search.p95Ms.toFixed(1)}/${o.search.p99Ms.toFixed(1)}`, 19),
        pad(pair(o.filtered.p50Ms, o.filtered.p95Ms), 17),
        pad(pair(o.hybrid.p50Ms, o.hybrid.p95Ms), 17),
        pad(pair(o.replace.p50Ms, o.replace.p95Ms), 18),
        pad(pair(o.delete.p50Ms, o.delete.p95Ms), 16),
        pad(errors, 8),
        pad(s.rejections, 9),
        pad(s.database.commitsPerSecond.toFixed(0), 10),
        pad((s.database.bufferHitRatio * 100).toFixed(1), 6),
        `  ${s.threadCpu.map((x) => `${(x * 100).toFixed(0)}%`).join('/')}`,
      ].join(' '),
    )
  }
  lines.push('', 'waits sampled per step (share of active-backend samples):')
  for (const s of r.steps) {
    const total = Object.values(s.database.waits).reduce((a, b) => a + b, 0)
    const top = Object.entries(s.database.waits)
      .sort((a, b) => b[1] - a[1])
      .slice(0, 5)
      .map(([k, v]) => `${k} ${((v / Math.max(1, total)) * 100).toFixed(0)}%`)
    lines.push(`  ${pad(s.clients, 2)} clients: ${top.join(', ') || 'no active backend seen'}`)
  }
  lines.push('')
  lines.push(
    r.breaks
      ? `breaks at:     ${r.breaks.clients} clients (${r.breaks.why}; --max-p95-ms ${c.maxP95Ms})`
      : r.verdict === 'not-run'
        ? 'breaks at:     no step ran'
        : `breaks at:     no step broke up to ${r.heldUpTo} clients (read p95 ≤ ${c.maxP95Ms} ms and errors ≤ 1% at every step)`,
  )
  lines.push(
    r.shape !== 'load' && r.shape !== 'breakpoint'
      ? `saturates at:  n/a for ${r.shape} (its clients do not only grow)`
      : r.saturates
        ? `saturates at:  ${r.saturates.clients} clients, ${r.saturates.throughput.toFixed(0)} ops/s (the next step bought < 10% more): size the pool or replicas from there`
        : 'saturates at:  not reached (throughput still grew ≥ 10% at the last step)',
  )
  if (r.spike)
    lines.push(
      `spike:         read p95 ${r.spike.baseReadP95Ms.toFixed(1)} → ${r.spike.burstReadP95Ms.toFixed(1)} (burst: ${r.spike.burstErrors} errors, ${r.spike.burstRejections} rejected) → ${r.spike.recoveryReadP95Ms.toFixed(1)} ms — ${r.spike.recovered ? 'recovered' : 'did NOT recover'} (within 1.5× + 1 ms of the base)`,
    )
  lines.push(`isolation: ${r.isolation.wrongRows} wrong of ${r.isolation.rowsChecked.toLocaleString('en-US')} rows checked`)
  for (const s of r.steps) {
    for (const f of [...s.failures.errors, ...s.failures.rejections]) lines.push(`  step ${s.clients}: ${f}`)
    for (const w of s.wrongSample)
      lines.push(
        `  WRONG at step ${s.clients}: ${w.caller} got ${w.documentId} (owner ${String(w.owner)}): ${w.why}${w.versions ? ` (${w.versions})` : ''}`,
      )
  }
  if (r.soak) {
    const s = r.soak
    lines.push(
      `soak:      ${s.clients} clients × ${s.minutes} min: ${s.throughput.toFixed(0)} ops/s, read p95 ${s.readP95Ms.toFixed(1)} ms, RSS ${s.samples[0]?.rssMB} → ${s.samples.at(-1)?.rssMB} MB, ` +
        `growth ${s.rssGrowthMbPerHour.toFixed(1)} MB/h over the second half (bound ${s.maxGrowthMbPerHour}) — ${s.passed ? 'passed' : 'FAILED'}`,
    )
  }
  if (r.replicas) lines.push(...replicaLines(r.replicas))
  for (const w of r.warnings) lines.push(`warning: ${w}`)
  lines.push(`bench process peak RSS: ${r.process.peakRssMB} MB`)
  return lines.join('\n')
}

/** The report's head: machine, database, corpus, load, method, smoke, baseline, shape, the table's header. */
function headerLines(r: LoadBenchReport): string[] {
  const c = r.config
  return [
    `rag-bench load — ${new Date().toISOString()}`,
    `machine:    ${r.machine.cpu}, ${r.machine.cores} cores, ${r.machine.memoryGiB} GiB, Node ${r.machine.node}`,
    `database:   ${r.server.provider}: PostgreSQL ${r.server.serverVersion}, pgvector ${r.server.pgvectorVersion}`,
    `corpus:     ${c.chunks.toLocaleString('en-US')} chunks, ${c.tenantCount} tenants (${c.mixLabel}, largest ${c.largestTenant.toLocaleString('en-US')}), dim ${c.dim}; seeded in ${r.seeding.seconds.toFixed(0)} s with ${r.seeding.indexes} HNSW index(es)`,
    `load:       mix ${Object.entries(c.mix)
      .map(([k, v]) => `${k}=${v}`)
      .join(',')}, steps of ${c.warmupSeconds} s warm-up + ${c.seconds} s`,
    `method:     ${r.method}`,
    `smoke:      ${r.smoke.queries} searches vs exactSearch: recall@10 ${r.smoke.recallAt10.toFixed(3)}, ${r.smoke.wrongRows} wrong — ${r.smoke.passed ? 'passed' : 'FAILED'}`,
    r.baseline
      ? `baseline:   a plain loop of store.search (one client, no harness): p50 ${r.baseline.p50Ms.toFixed(2)} ms, p95 ${r.baseline.p95Ms.toFixed(2)} ms over ${r.baseline.searches} searches`
      : 'baseline:   not run',
    `shape:      ${r.shape} (${r.config.workers} client thread(s) at most)`,
    '',
    'phase     clients  ops/s  read p95  search p50/p95/p99    filtered p50/p95  hybrid p50/p95    replace p50/p95    delete p50/p95   errors  rejected  commits/s  hit %  thread CPU',
  ]
}
