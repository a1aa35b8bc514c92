import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import type pg from 'pg'
import { from as copyFrom } from 'pg-copy-streams'
import type { IngestRow } from '../../src/index.js'

/**
 * The baseline ingest a careful developer writes by hand: binary COPY through pg-copy-streams, one
 * Buffer per row, no validation. pgscale's bulkIngest is measured against it.
 */
export async function bareBinaryCopy(client: pg.Client | pg.PoolClient, table: string, rows: Iterable<IngestRow>): Promise<void> {
  function* encode() {
    yield Buffer.concat([Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1'), Buffer.alloc(8)])
    for (const r of rows) {
      const t = Buffer.from(r.tenantId)
      const d = Buffer.from(r.documentId)
      const c = Buffer.from(r.content)
      const j = Buffer.from(JSON.stringify(r.metadata ?? {}))
      const n = r.embedding.length
      const b = Buffer.alloc(2 + 4 + t.length + 4 + d.length + 8 + 4 + c.length + 5 + j.length + 8 + 4 * n)
      let o = b.writeInt16BE(6, 0)
      o = b.writeInt32BE(t.length, o)
      o += t.copy(b, o)
      o = b.writeInt32BE(d.length, o)
      o += d.copy(b, o)
      o = b.writeInt32BE(4, o)
      o = b.writeInt32BE(r.chunkIndex, o)
      o = b.writeInt32BE(c.length, o)
      o += c.copy(b, o)
      o = b.writeInt32BE(j.length + 1, o)
      o = b.writeInt8(1, o)
      o += j.copy(b, o)
      o = b.writeInt32BE(4 + 4 * n, o)
      o = b.writeInt16BE(n, o)
      o = b.writeInt16BE(0, o)
      for (let i = 0; i < n; i++) o = b.writeFloatBE(r.embedding[i]!, o)
      yield b
    }
    yield Buffer.from([0xff, 0xff])
  }
  await pipeline(
    Readable.from(encode()),
    client.query(
      copyFrom(`copy ${table} (tenant_id, document_id, chunk_index, content, metadata, embedding) from stdin with (format binary)`),
    ),
  )
}
