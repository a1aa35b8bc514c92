import { readFileSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

/**
 * The operator tables of docs/adapters/*.md: every filter operator of a framework × the rows a field
 * can be in (present and satisfying the operator, present and not, missing, JSON null, a value of
 * another type), under each form the framework negates it with, answered by the framework's own
 * store (the reference) and by pgscale's adapter on the same rows. A test fills one in, and either
 * compares it with the table between the doc's markers (`<!-- operator-table:start -->` …
 * `<!-- operator-table:end -->`) or, with `PGSCALE_WRITE_OPERATOR_TABLES=1`, writes it there.
 */

/** The rows of one case: a field value per kind (`undefined`: no such row). */
export const KINDS = ['present ✓', 'present ✗', 'missing', 'null', 'wrong type'] as const
export type Kind = (typeof KINDS)[number]

/** One operator case: the operand and the field's value in each kind of row. */
export interface OperatorCase {
  /** The label in the table (`$lt 4`). */
  label: string
  /** The field's value where it satisfies the operator, where it does not, and of another type. */
  yes?: unknown
  no?: unknown
  wrong?: unknown
}

/** A row's metadata for a case's kind, or undefined when the case has no such row. */
export function metadataFor(c: OperatorCase, kind: Kind, caseKey: string, field = 'f'): Record<string, unknown> | undefined {
  switch (kind) {
    case 'present ✓':
      return c.yes === undefined ? undefined : { c: caseKey, [field]: c.yes }
    case 'present ✗':
      return c.no === undefined ? undefined : { c: caseKey, [field]: c.no }
    case 'missing':
      return { c: caseKey }
    case 'null':
      return { c: caseKey, [field]: null }
    case 'wrong type':
      return c.wrong === undefined ? undefined : { c: caseKey, [field]: c.wrong }
  }
}

/** What one store said for one row: matched, not matched, no such row, or the filter refused. */
export type Answer = 'yes' | 'no' | 'none' | 'refused'

/** One line of the table: a case under one form, with each store's answers per kind. */
export interface TableLine {
  filter: string
  reference: Answer[]
  adapter: Answer[]
}

const MARK: Record<Answer, string> = { yes: '✓', no: '✗', none: '—', refused: 'refused' }

/** The pgscale column: `same`, `refused` (a typed error before anything is sent), or the kinds where it differs. */
function verdict(line: TableLine): string {
  if (line.adapter.every((a) => a === 'refused')) return 'refused'
  const differs = KINDS.flatMap((k, i) => (line.reference[i] === line.adapter[i] ? [] : [`${k}: ${MARK[line.adapter[i]!]}`]))
  return differs.length === 0 ? 'same' : `**differs: ${differs.join(', ')}**`
}

/**
 * The table as markdown: one line per filter, a column per kind with the reference store's answer,
 * and pgscale's verdict (`same`, `refused`, or where it differs).
 */
export function renderTable(lines: readonly TableLine[], reference: string): string {
  const head = `| filter | ${KINDS.join(' | ')} | pgscale |\n|---|${KINDS.map(() => '---').join('|')}|---|`
  const body = lines.map((l) => `| \`${l.filter}\` | ${l.reference.map((r) => MARK[r]).join(' | ')} | ${verdict(l)} |`)
  return `${head}\n${body.join('\n')}\n\n(the reference's answer: ✓ returned, ✗ not, — no such row; reference: ${reference}.)`
}

const START = '<!-- operator-table:start -->'
const END = '<!-- operator-table:end -->'

/** The table between the markers of `docs/adapters/<doc>.md`. */
export function documentedTable(doc: string): string {
  const text = readFileSync(docPath(doc), 'utf8')
  const from = text.indexOf(START)
  const to = text.indexOf(END)
  if (from === -1 || to === -1) return ''
  return text.slice(from + START.length, to).trim()
}

/** Writes the table between the markers of `docs/adapters/<doc>.md` (when `PGSCALE_WRITE_OPERATOR_TABLES=1`). */
export function writeDocumentedTable(doc: string, table: string): void {
  const path = docPath(doc)
  const text = readFileSync(path, 'utf8')
  const from = text.indexOf(START)
  const to = text.indexOf(END)
  if (from === -1 || to === -1) throw new Error(`${path} has no ${START} … ${END} markers`)
  writeFileSync(path, `${text.slice(0, from + START.length)}\n${table}\n${text.slice(to)}`)
}

export const WRITE_TABLES = process.env.PGSCALE_WRITE_OPERATOR_TABLES === '1'

function docPath(doc: string): string {
  return fileURLToPath(new URL(`../../../docs/adapters/${doc}.md`, import.meta.url))
}

const UNMARK = new Map(Object.entries(MARK).map(([answer, mark]) => [mark, answer as Answer]))

/**
 * The adapter's answers the documented table records, by filter (for a run without the reference
 * store, e.g. on PGlite: the adapter is still held to the table).
 */
export function documentedAdapterAnswers(doc: string): Map<string, Answer[]> {
  const out = new Map<string, Answer[]>()
  for (const line of documentedTable(doc).split('\n')) {
    const m = /^\| `(.+)` \| (.+) \| ([^|]+) \|$/.exec(line)
    if (!m) continue
    const reference = m[2]!.split(' | ').map((c) => UNMARK.get(c)!)
    const differs = /^\*\*differs: (.+)\*\*$/.exec(m[3]!)
    for (const part of differs ? differs[1]!.split(', ') : []) {
      const [kind, mark] = part.split(': ')
      reference[KINDS.indexOf(kind as Kind)] = UNMARK.get(mark!)!
    }
    out.set(m[1]!, m[3] === 'refused' ? reference.map(() => 'refused') : reference)
  }
  return out
}
