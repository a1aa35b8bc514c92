import type { PgVectorStore } from '../store/index.js'
import type { Finding } from './findings.js'

/** Options of {@link recallCheck}. */
export interface RecallCheckOptions {
  /** Figures older than this are stale (a warning). Default 7 days. */
  maxAgeDays?: number
  /** The target for tenants never tuned. Default 0.98. */
  targetRecall?: number
}

/**
 * The recall monitor judged: per tenant, the last recall measured on its recent real queries (or,
 * without those, on its chunks) against the target its tuning aimed at — `fail` below it, `warn`
 * when the figure is older than `maxAgeDays` or a tenant with its own index was never measured.
 *
 * ### Examples
 * ```ts
 * const findings = await recallCheck(store, { maxAgeDays: 7 })
 * ```
 */
export async function recallCheck(store: PgVectorStore, options: RecallCheckOptions = {}): Promise<Finding[]> {
  const maxAgeMs = (options.maxAgeDays ?? 7) * 86_400_000
  const targets = new Map((await store.tenantTuning()).map((t) => [t.tenantId, t.targetRecall]))
  const findings: Finding[] = []
  for (const tenant of await store.recallReport()) {
    const object = `${store.config.qualified} tenant ${tenant.tenantId}`
    const figure = tenant.recent ?? tenant.chunks
    const target = targets.get(tenant.tenantId) ?? options.targetRecall ?? 0.98
    if (!figure) {
      findings.push({
        level: 'warn',
        object,
        check: 'never-measured',
        detail: 'no recall figure: run pgscale optimize (it measures) or measureRecall',
      })
      continue
    }
    const source = tenant.recent ? 'recent queries' : 'chunk samples'
    const age = Date.now() - new Date(figure.measuredAt).getTime()
    if (figure.recall < target)
      findings.push({
        level: 'fail',
        object,
        check: 'below-target',
        detail: `recall@10 ${figure.recall.toFixed(3)} on ${source} < target ${target}: run pgscale optimize`,
      })
    else if (age > maxAgeMs)
      findings.push({
        level: 'warn',
        object,
        check: 'stale',
        detail: `recall@10 ${figure.recall.toFixed(3)} on ${source} measured ${(age / 86_400_000).toFixed(1)} days ago`,
      })
    else findings.push({ level: 'ok', object, check: 'recall', detail: `recall@10 ${figure.recall.toFixed(3)} on ${source} ≥ ${target}` })
  }
  return findings
}
