import { seededRandom } from '../../src/bench-kit.js'

/** What kind of short query: a sentence window, a section title, a man page's NAME line. */
export type ShortQueryKind = 'sentence' | 'title' | 'name'

/** One short query drawn from a document. */
export interface ShortQuery {
  kind: ShortQueryKind
  text: string
}

const words = (s: string) => s.trim().split(/\s+/).filter(Boolean)

/**
 * Short queries a user might type about a document, drawn from its text: the NAME line of a man
 * page ("rsync - a fast, versatile, remote file-copying tool"), section titles (an underlined
 * line, a numbered or Markdown heading), and windows of 6-12 words from its sentences. Seeded:
 * the same text and seed give the same queries.
 *
 * ### Examples
 * ```ts
 * shortQueries('NAME\nls - list directory contents\n…', 'man/man1/ls.1.gz', 'debian', 4)
 * // [{ kind: 'name', text: 'ls - list directory contents' }, { kind: 'sentence', text: '…' }, …]
 * ```
 */
export function shortQueries(text: string, document: string, seed: string, perDocument: number): ShortQuery[] {
  const random = seededRandom(`${seed}:queries:${document}`)
  const lines = text.split('\n').map((l) => l.trim())
  const out: ShortQuery[] = []
  const nameAt = lines.findIndex((l) => l === 'NAME')
  const name = nameAt >= 0 ? lines.slice(nameAt + 1).find((l) => l.length > 0) : undefined
  if (name && / - /.test(name) && name.length <= 120) out.push({ kind: 'name', text: name })
  const titles: string[] = []
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.replace(/^#{1,4}\s+/, '')
    const n = words(line).length
    if (n < 2 || n > 9 || line.length > 70 || /[.:;,]$/.test(line) || !/[A-Za-z]{3}/.test(line)) continue
    const underlined = /^[=\-~*^]{3,}$/.test(lines[i + 1] ?? '')
    const numbered = /^(\d+(\.\d+)*\.?)\s+[A-Z]/.test(line)
    const markdown = /^#{1,4}\s+\S/.test(lines[i]!)
    if (underlined || numbered || markdown) titles.push(line.replace(/^(\d+(\.\d+)*\.?)\s+/, ''))
  }
  if (titles.length) out.push({ kind: 'title', text: titles[random.int(titles.length)]! })
  const sentences = text
    .replace(/\s+/g, ' ')
    .split(/(?<=[.!?])\s+/)
    .map(words)
    .filter((w) => w.length >= 8 && w.length <= 40 && w.filter((x) => /^[A-Za-z][a-z]+$/.test(x)).length >= 5)
  while (out.length < perDocument && sentences.length) {
    const s = sentences.splice(random.int(sentences.length), 1)[0]!
    const size = 6 + random.int(7)
    const start = random.int(Math.max(1, s.length - size + 1))
    out.push({ kind: 'sentence', text: s.slice(start, start + size).join(' ') })
  }
  return out.slice(0, perDocument)
}

/**
 * Splits a tenant's queries into traffic (sent to the store before tuning: what its query sample
 * learns from) and evaluation (held out: never searched before the measurement), alternating in
 * a seeded order, no text in both.
 *
 * ### Examples
 * ```ts
 * const { traffic, evaluation } = splitQueries(queries, 'debian:large-a')
 * ```
 */
export function splitQueries<Q extends { text: string }>(queries: readonly Q[], seed: string): { traffic: Q[]; evaluation: Q[] } {
  const random = seededRandom(`${seed}:split`)
  const unique = [...new Map(queries.map((q) => [q.text.toLowerCase(), q])).values()]
  for (let i = unique.length - 1; i > 0; i--) {
    const j = random.int(i + 1)
    ;[unique[i], unique[j]] = [unique[j]!, unique[i]!]
  }
  return { traffic: unique.filter((_, i) => i % 2 === 0), evaluation: unique.filter((_, i) => i % 2 === 1) }
}
