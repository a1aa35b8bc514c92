import { closeSync, openSync, readSync, writeSync } from 'node:fs'
import type { IngestRow } from '../../src/index.js'

/**
 * Writes rows to a file of length-prefixed records (a JSON head, then the embedding's float32s), so
 * a bench can replay a corpus many times without holding it in memory or paying its generation on
 * every replay. Returns the number of rows written.
 *
 * ### Examples
 * ```ts
 * writeRowFile('/tmp/rows.bin', generateCorpus(spec))
 * for (const row of readRowFile('/tmp/rows.bin')) ...
 * ```
 */
export function writeRowFile(path: string, rows: Iterable<IngestRow>): number {
  const fd = openSync(path, 'w')
  let count = 0
  let pending: Buffer[] = []
  let pendingBytes = 0
  const flush = () => {
    writeSync(fd, Buffer.concat(pending, pendingBytes))
    pending = []
    pendingBytes = 0
  }
  try {
    for (const r of rows) {
      const head = Buffer.from(JSON.stringify({ t: r.tenantId, d: r.documentId, c: r.chunkIndex, x: r.content, m: r.metadata ?? {} }))
      const record = Buffer.alloc(8 + head.length + 4 * r.embedding.length)
      record.writeUInt32LE(head.length, 0)
      record.writeUInt32LE(r.embedding.length, 4)
      head.copy(record, 8)
      Buffer.from(Float32Array.from(r.embedding).buffer).copy(record, 8 + head.length)
      pending.push(record)
      pendingBytes += record.length
      count++
      if (pendingBytes > 8 << 20) flush()
    }
    flush()
  } finally {
    closeSync(fd)
  }
  return count
}

/**
 * Streams the rows of a file {@link writeRowFile} wrote, reading 8 MB at a time; each embedding is
 * a fresh `Float32Array`.
 *
 * ### Examples
 * ```ts
 * await store.bulkIngest(readRowFile('/tmp/rows.bin'))
 * ```
 */
export function* readRowFile(path: string): Generator<IngestRow> {
  const fd = openSync(path, 'r')
  try {
    let buffer = Buffer.alloc(0)
    let eof = false
    const fill = (need: number) => {
      while (buffer.length < need && !eof) {
        const chunk = Buffer.alloc(8 << 20)
        const n = readSync(fd, chunk, 0, chunk.length, null)
        if (n === 0) eof = true
        buffer = Buffer.concat([buffer, chunk.subarray(0, n)])
      }
      return buffer.length >= need
    }
    while (fill(8)) {
      const headLength = buffer.readUInt32LE(0)
      const dim = buffer.readUInt32LE(4)
      const size = 8 + headLength + 4 * dim
      if (!fill(size)) throw new Error(`truncated row file ${path}`)
      const head = JSON.parse(buffer.toString('utf8', 8, 8 + headLength)) as {
        t: string
        d: string
        c: number
        x: string
        m: Record<string, unknown>
      }
      const embedding = new Float32Array(dim)
      Buffer.from(embedding.buffer).set(buffer.subarray(8 + headLength, size))
      buffer = buffer.subarray(size)
      yield { tenantId: head.t, documentId: head.d, chunkIndex: head.c, content: head.x, metadata: head.m, embedding }
    }
  } finally {
    closeSync(fd)
  }
}
