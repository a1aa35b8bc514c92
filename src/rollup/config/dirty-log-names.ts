import { assertQualifiedName, fitIdentifier } from '../../sql/identifier.js'
import { quoteQualified } from '../../sql/quote.js'
import type { RollupParts } from './rollup-parts.js'

/** The names of a rollup's dirty-key log, its trigger function and its triggers on the source. */
export interface DirtyKeyNames {
  /** The append-only log of `(tenant_id, month)` keys written since their last refresh (quoted). */
  log: string
  /** The log's `(tenant_id, month)` index (bare name). */
  logIndex: string
  /** The statement-level trigger function (quoted). */
  fn: string
  /** One trigger per event on the source (bare names). */
  triggers: { insert: string; update: string; delete: string; truncate: string }
}

/**
 * The tracking objects of a rollup, named after its target table (`expenses_monthly` →
 * `expenses_monthly_dirty`, `expenses_monthly_track`, `pgscale_expenses_monthly_track_ins` …), in
 * the target's schema; long names are shortened with a hash to fit 63 bytes.
 *
 * ### Examples
 * ```ts
 * dirtyKeyNames(parts).log // '"expenses_monthly_dirty"'
 * ```
 */
export function dirtyKeyNames(parts: RollupParts): DirtyKeyNames {
  const { schema, name } = assertQualifiedName(parts.target.name, 'rollup table name')
  const trigger = (event: string) => fitIdentifier(`pgscale_${name}`, `track_${event}`)
  return {
    log: quoteQualified(schema, fitIdentifier(name, 'dirty')),
    logIndex: fitIdentifier(name, 'dirty_key'),
    fn: quoteQualified(schema, fitIdentifier(name, 'track')),
    triggers: { insert: trigger('ins'), update: trigger('upd'), delete: trigger('del'), truncate: trigger('trunc') },
  }
}
