import { createHash } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { MetadataFilter } from '../../src/index.js'
import { seededRandom } from '../../src/bench-kit.js'

/**
 * A chunk's metadata in the Debian-documentation corpus: fields that follow the content —
 * `source` (the package the text came from) and `section` (the man section, or the kind of
 * /usr/share/doc file) — and fields that do not: `bucket` (a seeded hash of the chunk's id into
 * 0..999) and `year` (2005..2024, from another seeded hash).
 */
export interface ChunkMetadata {
  source: string
  section: string
  bucket: number
  year: number
}

/** How many buckets `bucket` spreads the chunks over (0..BUCKETS-1). */
export const BUCKETS = 1000

/** The metadata fields the filtered phase declares with `createMetadataIndex`, with their types. */
export const FILTERED_FIELDS = [
  ['source', 'string'],
  ['section', 'string'],
  ['bucket', 'number'],
] as const

/** One rung of the real-text filter ladder: which field, whether it follows the content, and a target share. */
export interface CorpusFilterRung {
  /** The key of the query's `filters` object in queries.jsonl. */
  key: string
  field: 'source' | 'section' | 'bucket'
  /** Whether the field follows the content (the chunks near a query tend to share its value). */
  follows: boolean
  /** What it is: a sentence for the report. */
  what: string
  /** For an independent range, the share of the rows it aims at. */
  share?: number
  /** For an independent range: `below` is `{ bucket: { $lt: share × 1000 } }`, the same for every query; `window` a `$gte`/`$lt` window of that width at each query's own offset. */
  range?: 'below' | 'window'
}

/**
 * The ladder, in the order the phase measures it: the query's own source and section (the
 * nearest rows match), another source and section of the same tenant, picked in proportion to
 * their chunks (the nearest matching rows lie elsewhere), and `bucket` ranges at 1%, 10%, 33%
 * and 50% of the rows: `$lt` the share (the same filter for every query, as an ACL repeats) and a
 * window of that width at each query's own seeded offset (a filter no other query sends).
 */
export const CORPUS_FILTER_RUNGS: readonly CorpusFilterRung[] = [
  { key: 'own-source', field: 'source', follows: true, what: "the query's own package" },
  { key: 'other-source', field: 'source', follows: true, what: 'another package of the tenant (by its chunks)' },
  { key: 'own-section', field: 'section', follows: true, what: "the query's own section" },
  { key: 'other-section', field: 'section', follows: true, what: 'another section of the tenant (by its chunks)' },
  ...[0.01, 0.1, 0.33, 0.5].map((share) => ({
    key: `bucket-${Math.round(share * 100)}`,
    field: 'bucket' as const,
    follows: false,
    what: `bucket below ${Math.round(share * BUCKETS)}: ${Math.round(share * 100)}% of the rows, the same filter for every query`,
    share,
    range: 'below' as const,
  })),
  ...[0.01, 0.1, 0.33, 0.5].map((share) => ({
    key: `window-${Math.round(share * 100)}`,
    field: 'bucket' as const,
    follows: false,
    what: `a bucket window of ${Math.round(share * 100)}% at the query's own offset`,
    share,
    range: 'window' as const,
  })),
]

/**
 * Which package installed each file, from dpkg's file lists (`/var/lib/dpkg/info/*.list`); an
 * empty map where there are none.
 *
 * ### Examples
 * ```ts
 * packageOwners().get('/usr/share/man/man1/ls.1.gz') // 'coreutils'
 * ```
 */
export function packageOwners(infoDir = '/var/lib/dpkg/info'): Map<string, string> {
  const owners = new Map<string, string>()
  let lists: string[]
  try {
    lists = readdirSync(infoDir).filter((f) => f.endsWith('.list'))
  } catch {
    return owners
  }
  for (const list of lists.sort()) {
    const pkg = list.slice(0, -'.list'.length).replace(/:.*$/, '')
    for (const path of readFileSync(join(infoDir, list), 'utf8').split('\n')) if (path && !owners.has(path)) owners.set(path, pkg)
  }
  return owners
}

/**
 * The package a document came from: /usr/share/doc/<pkg>/… gives `pkg`; a man page its owner in
 * dpkg's lists, else the page's name (`man/man1/ls.1.gz` → `ls`).
 *
 * ### Examples
 * ```ts
 * sourceOf('doc/bash/copyright', new Map()) // 'bash'
 * sourceOf('man/man1/ls.1.gz', new Map([['/usr/share/man/man1/ls.1.gz', 'coreutils']])) // 'coreutils'
 * ```
 */
export function sourceOf(document: string, owners: ReadonlyMap<string, string>): string {
  const doc = /^doc\/([^/]+)\//.exec(document)
  if (doc) return doc[1]!
  const owner = owners.get(`/usr/share/${document}`)
  if (owner) return owner
  const name = document.split('/').at(-1)!.replace(/\.gz$/, '')
  return name.replace(/\.[1-8][a-z0-9]*$/, '') || name
}

/**
 * The section of a document: a man page's section number ("1".."8"); for /usr/share/doc the kind
 * of file — "copyright", "changelog", "news", "readme" — or "doc" for everything else.
 *
 * ### Examples
 * ```ts
 * sectionOf('man/man8/mount.8.gz') // '8'
 * sectionOf('doc/bash/changelog.Debian.gz') // 'changelog'
 * sectionOf('doc/bash/examples/loadables/README') // 'readme'
 * ```
 */
export function sectionOf(document: string): string {
  const man = /^man\/man([1-8])\//.exec(document)
  if (man) return man[1]!
  const name = document.split('/').at(-1)!.toLowerCase()
  if (name.startsWith('copyright')) return 'copyright'
  if (name.startsWith('changelog')) return 'changelog'
  if (name.startsWith('news')) return 'news'
  if (name.startsWith('readme')) return 'readme'
  return 'doc'
}

/** A seeded hash of `text` into 0..n-1. */
function hashInto(text: string, n: number): number {
  return createHash('md5').update(text).digest().readUInt32LE(0) % n
}

/**
 * A chunk's metadata: `source` and `section` from its document, `bucket` and `year` from seeded
 * hashes of its id (tenant, document, chunk) — the same chunk and seed give the same values.
 *
 * ### Examples
 * ```ts
 * chunkMetadata({ tenant: 'large-a', document: 'doc/bash/copyright', chunk: 0 }, owners, 'debian')
 * // { source: 'bash', section: 'copyright', bucket: 417, year: 2013 }
 * ```
 */
export function chunkMetadata(
  c: { tenant: string; document: string; chunk: number },
  owners: ReadonlyMap<string, string>,
  seed: string,
): ChunkMetadata {
  const id = `${c.tenant}\u0000${c.document}\u0000${c.chunk}`
  return {
    source: sourceOf(c.document, owners),
    section: sectionOf(c.document),
    bucket: hashInto(`${seed}:bucket:${id}`, BUCKETS),
    year: 2005 + hashInto(`${seed}:year:${id}`, 20),
  }
}

/** Chunks per value of a field in one tenant. */
export type ValueCounts = ReadonlyMap<string, number>

/**
 * The filters a query is measured with, one per rung of {@link CORPUS_FILTER_RUNGS} (keyed by the
 * rung's `key`): its own document's source and section; another source and section of the tenant,
 * drawn in proportion to their chunks (left out when the tenant has no other); per share a
 * `bucket` range below it and a window of its width at a seeded offset. Seeded by `seed` (pass
 * one per query).
 *
 * ### Examples
 * ```ts
 * queryFilters({ source: 'bash', section: '1' }, { sources, sections }, 'debian:large-a:7')
 * // { 'own-source': { source: 'bash' }, 'other-source': { source: 'tar' }, …, 'bucket-10': { bucket: { $lt: 100 } }, 'window-10': { bucket: { $gte: 312, $lt: 412 } } }
 * ```
 */
export function queryFilters(
  own: { source: string; section: string },
  tenant: { sources: ValueCounts; sections: ValueCounts },
  seed: string,
): Record<string, MetadataFilter> {
  const random = seededRandom(`${seed}:filters`)
  const out: Record<string, MetadataFilter> = {}
  for (const rung of CORPUS_FILTER_RUNGS) {
    if (rung.field === 'bucket') {
      const width = Math.round(rung.share! * BUCKETS)
      if (rung.range === 'below') out[rung.key] = { bucket: { $lt: width } }
      else {
        const lo = random.int(BUCKETS - width + 1)
        out[rung.key] = { bucket: { $gte: lo, $lt: lo + width } }
      }
      continue
    }
    const value = rung.field === 'source' ? own.source : own.section
    if (rung.key.startsWith('own-')) out[rung.key] = { [rung.field]: value }
    else {
      const other = weightedOther(rung.field === 'source' ? tenant.sources : tenant.sections, value, random.next())
      if (other !== undefined) out[rung.key] = { [rung.field]: other }
    }
  }
  return out
}

/** A value other than `except`, drawn in proportion to its count (`u` uniform in [0, 1)); `undefined` if there is none. */
function weightedOther(counts: ValueCounts, except: string, u: number): string | undefined {
  const others = [...counts].filter(([v, n]) => v !== except && n > 0).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
  const total = others.reduce((s, [, n]) => s + n, 0)
  let at = u * total
  for (const [v, n] of others) {
    if (at < n) return v
    at -= n
  }
  return others.at(-1)?.[0]
}
