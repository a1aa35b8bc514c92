import type { IngestRow, MetadataFieldType, MetadataFilter } from '../../../src/index.js'
import { seededRandom } from '../../synthetic/random.js'

/** One filter of the ladder: what it is, how selective it was built to be. */
export interface LadderFilter {
  label: string
  kind: 'equality' | 'range' | '$in' | '$or'
  /** The share of rows it was built to pass (measured: `selectivity` in the report). */
  target: number
  filter: MetadataFilter
}

/** Selectivities of the ladder: 0.1% → 50%. */
export const LADDER_SELECTIVITIES = [0.001, 0.01, 0.1, 0.33, 0.5] as const

const EQUALITY_FIELDS: Record<(typeof LADDER_SELECTIVITIES)[number], string> = {
  0.001: 'e0_1',
  0.01: 'e1',
  0.1: 'e10',
  0.33: 'e33',
  0.5: 'e50',
}

/** The metadata fields the ladder filters on, and the index each is declared with. */
export const LADDER_FIELDS: Array<[string, MetadataFieldType]> = [
  ...Object.values(EQUALITY_FIELDS).map((f): [string, MetadataFieldType] => [f, 'string']),
  ['o0_1', 'string'],
  ['r', 'number'],
  ['c', 'number'],
]

/**
 * Adds the ladder's fields to a row's metadata, drawn from the row's own seed — independent of its
 * vector, its topic and its document: `eX` is `'yes'` with probability X% (else `'no'`), `o0_1` a
 * second rare flag, `r` uniform in [0, 1000), `c` a uniform integer 0..999.
 *
 * ### Examples
 * ```ts
 * for (const row of generateCorpus(spec)) yield withLadderFields(row, '42')
 * ```
 */
export function withLadderFields(row: IngestRow, seed: string): IngestRow {
  const random = seededRandom(`${seed}:filters:${row.tenantId}:${row.documentId}:${row.chunkIndex}`)
  const fields: Record<string, unknown> = {}
  for (const [p, field] of Object.entries(EQUALITY_FIELDS)) fields[field] = random.next() < Number(p) ? 'yes' : 'no'
  fields.o0_1 = random.next() < 0.001 ? 'yes' : 'no'
  fields.r = Math.floor(random.next() * 1_000_000) / 1000
  fields.c = random.int(1000)
  return { ...row, metadata: { ...row.metadata, ...fields } }
}

/** The ladder: equality, range and `$in` at each selectivity, and an `$or` of two rare values. */
export function filterLadder(): LadderFilter[] {
  const out: LadderFilter[] = []
  for (const p of LADDER_SELECTIVITIES) {
    const pct = `${+(p * 100).toFixed(1)}%`
    out.push({ label: `equality ${pct}`, kind: 'equality', target: p, filter: { [EQUALITY_FIELDS[p]]: 'yes' } })
    out.push({ label: `range ${pct}`, kind: 'range', target: p, filter: { r: { $lt: p * 1000 } } })
    out.push({
      label: `$in ${pct}`,
      kind: '$in',
      target: p,
      filter: { c: { $in: Array.from({ length: Math.round(p * 1000) }, (_, i) => (i * 7) % 1000) } },
    })
  }
  out.push({ label: '$or of two 0.1% values', kind: '$or', target: 0.002, filter: { $or: [{ e0_1: 'yes' }, { o0_1: 'yes' }] } })
  return out
}

/**
 * Adds a field that follows the content: `ct` places the row's topic on a 0..1000 scale — topic i
 * of the tenant's `topics` covers [1000·i/topics, 1000·(i+1)/topics), the row uniform inside it —
 * so a range on `ct` keeps whole topics: for a query about another topic the nearest matching rows
 * lie in other clusters (the walk's hard case), as with a `department` or `product` field.
 *
 * ### Examples
 * ```ts
 * withCorrelatedField(row, '42', 24) // metadata.ct = 1000 × (topic + u) / 24
 * ```
 */
export function withCorrelatedField(row: IngestRow, seed: string, topics: number): IngestRow {
  const random = seededRandom(`${seed}:correlated:${row.tenantId}:${row.documentId}:${row.chunkIndex}`)
  const topic = Number((row.metadata as { topic?: unknown } | undefined)?.topic ?? 0)
  const ct = Math.floor(((topic + random.next()) / topics) * 1_000_000) / 1000
  return { ...row, metadata: { ...row.metadata, ct } }
}

/** The correlated ladder: a range on `ct` (whole topics) at each selectivity. */
export function correlatedLadder(): LadderFilter[] {
  return LADDER_SELECTIVITIES.map((p) => ({
    label: `correlated range ${+(p * 100).toFixed(1)}%`,
    kind: 'range' as const,
    target: p,
    filter: { ct: { $lt: p * 1000 } },
  }))
}
