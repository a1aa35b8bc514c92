import { spawnSync } from 'node:child_process'
import { closeSync, openSync, writeSync } from 'node:fs'
import type pg from 'pg'
import type { IngestRow, PgVectorStore } from '../../src/index.js'
import { bareBinaryCopy } from '../baselines/raw-copy.js'
import type { LangChainIngest } from './langchain.js'
import { readRowFile } from './row-file.js'

const COLUMNS = 'tenant_id, document_id, chunk_index, content, metadata, embedding'

/** Where the ingest methods read the same rows from, and where they write them. */
export interface IngestInputs {
  store: PgVectorStore
  /** The same table shape with `fullText: false` (no tsvector column, no GIN index). */
  vectorOnly: PgVectorStore
  /** An unlogged table holding the same rows, for the server-bound ceiling. */
  sourceTable: string
  raw: pg.Client
  url: string
  table: string
  /** The rows as {@link writeRowFile} wrote them. */
  rowFile: string
  /** The same rows as COPY text, for psql. */
  tsvFile: string
  langchain?: LangChainIngest
}

/**
 * The ingest methods compared side by side, each loading the rows of one file into an empty table.
 *
 * ### Examples
 * ```ts
 * for (const [name, load] of Object.entries(ingestMethods(inputs))) await load()
 * ```
 */
export function ingestMethods(x: IngestInputs): Record<string, () => Promise<void>> {
  const methods: Record<string, () => Promise<void>> = {
    'store.bulkIngest (binary COPY)': async () => void (await x.store.bulkIngest(readRowFile(x.rowFile))),
    'bare Node binary COPY (pg-copy-streams)': () => bareBinaryCopy(x.raw, x.table, readRowFile(x.rowFile)),
    'psql \\copy (text)': async () => {
      const r = spawnSync('psql', [x.url, '-v', 'ON_ERROR_STOP=1', '-c', `\\copy ${x.table} (${COLUMNS}) from '${x.tsvFile}'`], {
        encoding: 'utf8',
      })
      if (r.status !== 0) throw new Error(`psql failed: ${r.stderr}`)
    },
    'Node pg multi-row INSERT ×500': () => multiRowInsert(x.raw, x.table, readRowFile(x.rowFile)),
    'store.bulkIngest, fullText: false': async () => void (await x.vectorOnly.bulkIngest(readRowFile(x.rowFile))),
    // The physical limit of this table on this server: no client, no parsing, no network.
    'server-bound ceiling (INSERT … SELECT from an unlogged copy)': async () =>
      void (await x.raw.query(`insert into ${x.table} (${COLUMNS}) select ${COLUMNS} from ${x.sourceTable}`)),
  }
  if (x.langchain) methods['LangChain.js PGVectorStore.addDocuments'] = () => x.langchain!.add(x.url, readRowFile(x.rowFile))
  return methods
}

/**
 * Creates `sourceTable`, an unlogged copy of the rows of `rowFile` for the server-bound ceiling.
 *
 * ### Examples
 * ```ts
 * await loadCeilingSource(raw, 'bench_source', rowFile)
 * ```
 */
export async function loadCeilingSource(raw: pg.Client, sourceTable: string, rowFile: string): Promise<void> {
  await raw.query(`drop table if exists ${sourceTable}`)
  await raw.query(
    `create unlogged table ${sourceTable} (tenant_id text, document_id text, chunk_index int, content text, metadata jsonb, embedding vector)`,
  )
  await bareBinaryCopy(raw, sourceTable, readRowFile(rowFile))
  await raw.query(`vacuum analyze ${sourceTable}`)
}

/**
 * Writes rows as COPY text (tab-separated, escaped), streamed in slices.
 *
 * ### Examples
 * ```ts
 * writeCopyText('/tmp/rows.tsv', readRowFile('/tmp/rows.bin'))
 * ```
 */
export function writeCopyText(path: string, rows: Iterable<IngestRow>): void {
  const fd = openSync(path, 'w')
  try {
    let lines: string[] = []
    for (const r of rows) {
      lines.push(
        [
          r.tenantId,
          r.documentId,
          r.chunkIndex,
          escapeCopyText(r.content),
          escapeCopyText(JSON.stringify(r.metadata ?? {})),
          `[${Array.from(r.embedding).join(',')}]`,
        ].join('\t'),
      )
      if (lines.length === 1000) {
        writeSync(fd, lines.join('\n') + '\n')
        lines = []
      }
    }
    if (lines.length) writeSync(fd, lines.join('\n') + '\n')
  } finally {
    closeSync(fd)
  }
}

function escapeCopyText(s: string): string {
  return s.replace(/\\/g, '\\\\').replace(/\t/g, '\\t').replace(/\n/g, '\\n').replace(/\r/g, '\\r')
}

/** The hand-written alternative: multi-row INSERTs of 500 rows, parameters bound. */
async function multiRowInsert(client: pg.Client, table: string, rows: Iterable<IngestRow>): Promise<void> {
  let batch: IngestRow[] = []
  const send = async () => {
    const params: unknown[] = []
    const values = batch.map((r, j) => {
      params.push(
        r.tenantId,
        r.documentId,
        r.chunkIndex,
        r.content,
        JSON.stringify(r.metadata ?? {}),
        `[${Array.from(r.embedding).join(',')}]`,
      )
      const b = j * 6
      return `($${b + 1}, $${b + 2}, $${b + 3}, $${b + 4}, $${b + 5}, $${b + 6})`
    })
    await client.query(`insert into ${table} (${COLUMNS}) values ${values.join(', ')}`, params)
    batch = []
  }
  for (const r of rows) {
    batch.push(r)
    if (batch.length === 500) await send()
  }
  if (batch.length) await send()
}
