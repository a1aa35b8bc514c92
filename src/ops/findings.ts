/** One thing `pgscale doctor` or `pgscale recall` found. */
export interface Finding {
  /** `fail`: broken or below target; `warn`: needs attention soon; `ok`: checked and fine. */
  level: 'ok' | 'warn' | 'fail'
  /** What it is about: a store's table, a tenant of it, a rollup. */
  object: string
  /** The check's name, stable for alerting (`invalid-index`, `below-target`, …). */
  check: string
  /** Why: what was found, in a sentence. */
  detail: string
  /** What the object is, when the finding is about a recorded object (`doctor`'s `missing` and `cannot-open`). */
  kind?: 'store' | 'rollup'
  /** The command that fixes it, when there is one (`pgscale forget store:public.rag_chunks`). */
  fix?: string
}

/**
 * The exit code a cron job alerts on: 0 when nothing is wrong, 1 when something warns or fails.
 *
 * ### Examples
 * ```ts
 * process.exitCode = exitCodeOf(findings)
 * ```
 */
export function exitCodeOf(findings: readonly Finding[]): number {
  return findings.some((f) => f.level !== 'ok') ? 1 : 0
}
