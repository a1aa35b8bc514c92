import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import type { DocumentInterface } from '@langchain/core/documents'
import type { EmbeddingsInterface } from '@langchain/core/embeddings'
import type { ListKeyOptions, RecordManagerInterface, UpdateOptions } from '@langchain/core/indexing'

/**
 * What the LangChain suites share. The framework lives in the example app (examples/langchain,
 * `npm run adapters:install`), not in the main install: without it the suites are skipped with
 * {@link LANGCHAIN_MISSING} as the reason. Everything that loads the framework is imported here,
 * inside the suites' hooks, so a file without the framework still loads; vitest resolves the
 * `@langchain/*` imports of the tests and of the adapter from the example app (vitest.config.ts).
 */
const CORE = fileURLToPath(new URL('../../../examples/langchain/node_modules/@langchain/core/package.json', import.meta.url))

/** Why the LangChain suites cannot run here ('' when they can). */
export const LANGCHAIN_MISSING = existsSync(CORE)
  ? ''
  : 'needs @langchain/core in examples/langchain/node_modules: run npm run adapters:install -- langchain'

/** The adapter, from source (what `pgscale/langchain` builds from). */
export type Adapter = typeof import('../../../src/adapters/langchain/index.js')
export type PgScaleVectorStore = InstanceType<Adapter['PgScaleVectorStore']>

/** The dimensions of {@link LangChainKit.synthetic}: LangChain Python's suite uses 6 as well. */
export const SYNTHETIC_DIMENSIONS = 6

/** The adapter and the parts of LangChain the suites use, loaded. */
export interface LangChainKit {
  adapter: Adapter
  Document: typeof import('@langchain/core/documents').Document
  index: typeof import('@langchain/core/indexing').index
  /** `SyntheticEmbeddings({ vectorSize: 6 })`, refusing texts it cannot embed (no letters: `[]`; all zeros). */
  synthetic(): EmbeddingsInterface
  /** 2-d unit vectors from the first angle in the text (`'10°'` → [cos 10°, sin 10°]): placed by hand, for MMR and scores. */
  angles(): EmbeddingsInterface
}

/**
 * Loads the adapter and LangChain (call in `beforeAll` of a suite that LANGCHAIN_MISSING guards).
 *
 * ### Examples
 * ```ts
 * describeUnless(LANGCHAIN_MISSING)('…', () => { let kit: LangChainKit; beforeAll(async () => { kit = await loadLangChain() }) })
 * ```
 */
export async function loadLangChain(): Promise<LangChainKit> {
  const [adapter, documents, embeddings, testing, indexing] = await Promise.all([
    import('../../../src/adapters/langchain/index.js'),
    import('@langchain/core/documents'),
    import('@langchain/core/embeddings'),
    import('@langchain/core/utils/testing'),
    import('@langchain/core/indexing'),
  ])

  class GuardedSyntheticEmbeddings extends testing.SyntheticEmbeddings {
    override async embedQuery(text: string): Promise<number[]> {
      const vector = await super.embedQuery(text)
      if (vector.length !== SYNTHETIC_DIMENSIONS || vector.every((x) => x === 0)) {
        throw new Error(`SyntheticEmbeddings has no usable vector for ${JSON.stringify(text)}: use letters (it drops everything else)`)
      }
      return vector
    }
  }

  class AngleEmbeddings extends embeddings.Embeddings {
    async embedDocuments(texts: string[]): Promise<number[][]> {
      return texts.map((text) => angleVector(text))
    }
    async embedQuery(text: string): Promise<number[]> {
      return angleVector(text)
    }
  }

  return {
    adapter,
    Document: documents.Document,
    index: indexing.index,
    synthetic: () => new GuardedSyntheticEmbeddings({ vectorSize: SYNTHETIC_DIMENSIONS }),
    angles: () => new AngleEmbeddings({}),
  }
}

/** The unit vector at the first `<degrees>°` in `text`. */
export function angleVector(text: string): number[] {
  const match = /(-?\d+(?:\.\d+)?)°/.exec(text)
  if (!match) throw new Error(`no angle in ${JSON.stringify(text)}`)
  const radians = (Number(match[1]) * Math.PI) / 180
  return [Math.cos(radians), Math.sin(radians)]
}

/**
 * LangChain's `RecordManagerInterface` in memory, for `index()`: Python's semantics, with `listKeys`
 * strict on `before` (`updatedAt < before`), on a logical clock that advances on every `getTime()`
 * and write, so a run never lists what it wrote itself as stale (community's in-memory manager
 * compares `<=` on milliseconds, which can).
 */
export class InMemoryRecordManager implements RecordManagerInterface {
  readonly records = new Map<string, { updatedAt: number; groupId: string | null }>()
  #clock = 0

  async createSchema(): Promise<void> {}

  async getTime(): Promise<number> {
    return ++this.#clock
  }

  async update(keys: string[], options: UpdateOptions): Promise<void> {
    const now = ++this.#clock
    if (options.timeAtLeast !== undefined && options.timeAtLeast > now) throw new Error('timeAtLeast is in the future')
    keys.forEach((key, i) => this.records.set(key, { updatedAt: now, groupId: options.groupIds?.[i] ?? null }))
  }

  async exists(keys: string[]): Promise<boolean[]> {
    return keys.map((key) => this.records.has(key))
  }

  async listKeys(options: ListKeyOptions): Promise<string[]> {
    const keys = [...this.records]
      .filter(([, r]) => options.before === undefined || r.updatedAt < options.before)
      .filter(([, r]) => options.after === undefined || r.updatedAt > options.after)
      .filter(([, r]) => options.groupIds === undefined || options.groupIds.includes(r.groupId))
      .map(([key]) => key)
    return options.limit === undefined ? keys : keys.slice(0, options.limit)
  }

  async deleteKeys(keys: string[]): Promise<void> {
    for (const key of keys) this.records.delete(key)
  }
}

/** A document's text, metadata and id, as a plain object (what `toEqual` compares across classes). */
export function plain(doc: DocumentInterface): { pageContent: string; metadata: Record<string, unknown>; id: string | undefined } {
  return { pageContent: doc.pageContent, metadata: doc.metadata, id: doc.id }
}
