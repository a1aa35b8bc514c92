import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { gunzipSync } from 'node:zlib'

/** A chunk of real text for a bench tenant. */
export interface TextChunk {
  tenantId: string
  documentId: string
  chunkIndex: number
  content: string
}

/**
 * Real text cut into chunks for the benches that need a real model's input: each file's paragraphs
 * joined up to ~`chunkChars` characters, the files in name order; the first tenant takes chunks until
 * it has `perTenant`, then the next (a file is cut off where its tenant is full, and the next tenant
 * starts with the next file). Files ending in `.gz` are read through gunzip. Deterministic for the
 * same files.
 *
 * ### Examples
 * ```ts
 * const chunks = textChunks(['/usr/share/doc'], { tenants: 5, perTenant: 200 })
 * ```
 */
export function textChunks(
  sources: readonly string[],
  options: { tenants: number; perTenant: number; chunkChars?: number; minChars?: number },
): TextChunk[] {
  const chunkChars = options.chunkChars ?? 500
  const minChars = options.minChars ?? 80
  const out: TextChunk[] = []
  let tenant = 0
  let inTenant = 0
  for (const file of sources.flatMap(textFiles)) {
    if (tenant >= options.tenants) break
    const tenantId = `t${tenant}`
    let chunkIndex = 0
    for (const content of paragraphChunks(readText(file), chunkChars, minChars)) {
      out.push({ tenantId, documentId: `${tenantId}/${file.split('/').slice(-2).join('/')}`, chunkIndex: chunkIndex++, content })
      if (++inTenant === options.perTenant) {
        tenant++
        inTenant = 0
        break
      }
    }
  }
  return out
}

/** The readable text files under `path` (itself if a file), in name order: READMEs, `.txt`, `.md`, their `.gz`. */
function textFiles(path: string): string[] {
  if (!existsSync(path)) return []
  if (statSync(path).isFile()) return [path]
  const files: string[] = []
  for (const name of readdirSync(path).sort()) {
    const full = join(path, name)
    const stat = statSync(full, { throwIfNoEntry: false })
    if (stat?.isDirectory()) files.push(...textFiles(full))
    else if (stat?.isFile() && /(^README|\.txt|\.md)(\.gz)?$/i.test(name) && !/changelog/i.test(name)) files.push(full)
  }
  return files
}

function readText(file: string): string {
  const bytes = readFileSync(file)
  return (file.endsWith('.gz') ? gunzipSync(bytes) : bytes).toString('utf8')
}

/** Paragraphs (blank-line separated, whitespace folded) joined into chunks of up to `max` characters. */
function* paragraphChunks(text: string, max: number, min: number): Generator<string> {
  let current = ''
  for (const raw of text.split(/\n\s*\n/)) {
    const paragraph = raw.replace(/\s+/g, ' ').trim()
    if (!paragraph || !/[a-záéíóúñ]{3}/i.test(paragraph)) continue
    if (current && current.length + paragraph.length + 1 > max) {
      if (current.length >= min) yield current
      current = ''
    }
    current = current ? `${current} ${paragraph}` : paragraph.slice(0, max * 2)
  }
  if (current.length >= min) yield current
}

/** A query from a chunk: its first sentence (at most ~160 characters). */
export function firstSentence(content: string): string {
  const end = content.search(/[.!?](\s|$)/)
  const sentence = end > 20 ? content.slice(0, end + 1) : content
  return sentence.length > 160 ? sentence.slice(0, sentence.lastIndexOf(' ', 160)) : sentence
}
