import { existsSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import type pg from 'pg'
import type { IngestRow } from '../../src/index.js'

/** LangChain.js's write path, loaded from bench/.langchain when installed there. */
export interface LangChainIngest {
  /** `PGVectorStore.addDocuments` of the rows, in slices (precomputed embeddings). */
  add(connectionString: string, rows: Iterable<IngestRow>): Promise<void>
  drop(connectionString: string): Promise<void>
}

const SLICE = 2000

/**
 * LangChain.js from bench/.langchain (installed apart with `npm run bench:langchain:install`: its
 * peer dependencies conflict with ours), or undefined when it is not installed.
 *
 * ### Examples
 * ```ts
 * const langchain = await loadLangChain(384)
 * if (langchain) await langchain.add(url, rows)
 * ```
 */
export async function loadLangChain(dim: number): Promise<LangChainIngest | undefined> {
  const dir = join(process.cwd(), 'bench', '.langchain')
  if (!existsSync(join(dir, 'node_modules', '@langchain', 'community'))) return undefined
  const require = createRequire(join(dir, 'package.json'))
  const { PGVectorStore } = require('@langchain/community/vectorstores/pgvector') as any
  const { Embeddings } = require('@langchain/core/embeddings') as any
  const { Document } = require('@langchain/core/documents') as any
  const lcPg = require('pg') as typeof pg
  let vectors: number[][] = []
  let next = 0
  // Precomputed vectors: what is measured is LangChain's write path, not an embedding model.
  class Precomputed extends Embeddings {
    async embedDocuments(texts: string[]) {
      const out = vectors.slice(next, next + texts.length)
      next += texts.length
      return out
    }
    async embedQuery() {
      return vectors[0]!
    }
  }
  return {
    async add(connectionString, rows) {
      const pool = new lcPg.Pool({ connectionString })
      const lc = await PGVectorStore.initialize(new (Precomputed as any)({}), { pool, tableName: 'langchain_chunks', dimensions: dim })
      await pool.query('truncate langchain_chunks')
      let slice: IngestRow[] = []
      const flush = async () => {
        vectors = slice.map((r) => Array.from(r.embedding))
        next = 0
        const docs = slice.map(
          (r) =>
            new Document({
              pageContent: r.content,
              metadata: { tenantId: r.tenantId, documentId: r.documentId, chunkIndex: r.chunkIndex, ...r.metadata },
            }),
        )
        await lc.addDocuments(docs)
        slice = []
      }
      for (const row of rows) {
        slice.push(row)
        if (slice.length === SLICE) await flush()
      }
      if (slice.length) await flush()
      await lc.end()
    },
    async drop(connectionString) {
      const c = new lcPg.Client({ connectionString })
      await c.connect()
      await c.query('drop table if exists langchain_chunks')
      await c.end()
    },
  }
}
