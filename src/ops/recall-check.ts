import { deliveredMargin, MIN_BOUND_QUERIES, type PgVectorStore, type TenantRecallReport } from '../store/index.js'
import type { Finding } from './findings.js'

/** Options of {@link recallCheck}. */
export interface RecallCheckOptions {
  /** Figures older than this are stale (a warning). Default 7 days. */
  maxAgeDays?: number
  /** The target for tenants never tuned. Default 0.98. */
  targetRecall?: number
}

/**
 * The recall monitor judged, per tenant: its delivered recall (the last figure on its recent real
 * queries) against what its tuning stated — `fail` (`below-stated`) when delivered plus its own
 * one-sided 95% margin is below the target (`optimize()` re-tunes such a tenant from its query
 * sample), `warn` when it is below the target within the margin, or rests on fewer than
 * `MIN_BOUND_QUERIES` (30) queries (`sample-too-small`); without real queries, the query model's
 * figure against the target (`below-target`). `warn` too when the figure is older than
 * `maxAgeDays` or a tenant with its own index was never measured.
 *
 * ### Examples
 * ```ts
 * const findings = await recallCheck(store, { maxAgeDays: 7 })
 * ```
 */
export async function recallCheck(store: PgVectorStore, options: RecallCheckOptions = {}): Promise<Finding[]> {
  const maxAgeMs = (options.maxAgeDays ?? 7) * 86_400_000
  const findings: Finding[] = []
  for (const tenant of await store.recallReport()) {
    const object = `${store.config.qualified} tenant ${tenant.tenantId}`
    const figure = tenant.recent ?? tenant.chunks
    const target = tenant.targetRecall ?? options.targetRecall ?? 0.98
    if (!figure) {
      findings.push({
        level: 'warn',
        object,
        check: 'never-measured',
        detail: 'no recall figure: run pgscale optimize (it measures) or measureRecall',
      })
      continue
    }
    const delivered = deliveredFindings(object, tenant, target)
    if (delivered) {
      findings.push(delivered)
      continue
    }
    const source = tenant.recent ? 'recent queries' : 'model queries'
    const age = Date.now() - new Date(figure.measuredAt).getTime()
    if (!tenant.recent && figure.recall < target)
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
    else
      findings.push({
        level: 'ok',
        object,
        check: 'recall',
        detail: `recall@10 ${figure.recall.toFixed(3)} on ${source} ≥ ${target}${statedWords(tenant)}`,
      })
  }
  return findings
}

/**
 * The findings on delivered recall alone (what `pgscale doctor` adds to a store's health): a tenant
 * whose delivered recall is below what was stated, or rests on too few queries to say.
 *
 * ### Examples
 * ```ts
 * const findings = await deliveredRecallFindings(store) // [{ level: 'fail', check: 'below-stated', … }]
 * ```
 */
export async function deliveredRecallFindings(
  store: PgVectorStore,
  options: Pick<RecallCheckOptions, 'targetRecall'> = {},
): Promise<Finding[]> {
  const findings: Finding[] = []
  for (const tenant of await store.recallReport()) {
    const finding = deliveredFindings(
      `${store.config.qualified} tenant ${tenant.tenantId}`,
      tenant,
      tenant.targetRecall ?? options.targetRecall ?? 0.98,
    )
    if (finding) findings.push(finding)
  }
  return findings
}

/** A tenant's delivered recall judged (undefined: nothing to say, or no real queries measured). */
function deliveredFindings(object: string, tenant: TenantRecallReport, target: number): Finding | undefined {
  const recent = tenant.recent
  if (!recent) return undefined
  const margin = deliveredMargin(recent)
  const words = `delivered recall@10 ${recent.recall.toFixed(3)} on ${recent.queries} recent real queries (95% margin ${margin.toFixed(3)})`
  if (tenant.belowStated)
    return {
      level: 'fail',
      object,
      check: 'below-stated',
      detail: `${words} < target ${target} minus its margin${statedWords(tenant)}: run pgscale optimize (it re-tunes the tenant from its query sample)`,
    }
  if (recent.queries < MIN_BOUND_QUERIES)
    return {
      level: 'warn',
      object,
      check: 'sample-too-small',
      detail: `${words}: fewer than ${MIN_BOUND_QUERIES} queries, too few to judge against the target ${target}`,
    }
  if (recent.recall < target)
    return { level: 'warn', object, check: 'within-margin', detail: `${words} < target ${target}, within its sampling margin` }
  return undefined
}

function statedWords(tenant: TenantRecallReport): string {
  const s = tenant.stated
  return s?.lower === undefined
    ? ''
    : ` (stated ≥ ${s.lower.toFixed(3)} with 95% confidence, mean ${s.recall.toFixed(3)} over ${s.queries} queries)`
}
