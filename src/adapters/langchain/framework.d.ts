/**
 * The parts of LangChain.js (`@langchain/core` 1.4.0) that pgscale/langchain, its conformance suite
 * and its example use, declared for the main build (`npm run build`, `npm run typecheck`), which
 * installs no framework: `@langchain/core` is an optional peer dependency, and an app brings its own
 * copy. Each declaration is the real one (`@langchain/core/dist/*.d.ts`) trimmed to the members used
 * here; nothing is added. In a program that includes this file these ambient modules win over any
 * installed package, so `npx tsc -p tsconfig.adapters.json`, which excludes it, checks the adapter
 * and its tests against the real framework of examples/langchain (`npm run adapters:install`).
 */

declare module '@langchain/core/load/serializable' {
  /** `dist/load/serializable.d.ts` (trimmed). */
  export abstract class Serializable {
    lc_serializable: boolean
    lc_kwargs: Record<string, any>
    abstract lc_namespace: string[]
    static lc_name(): string
    get lc_id(): string[]
    constructor(kwargs?: Record<string, any>, ..._args: never[])
  }
}

declare module '@langchain/core/documents' {
  /** `dist/documents/document.d.ts`. */
  export interface DocumentInput<Metadata extends Record<string, any> = Record<string, any>> {
    pageContent: string
    metadata?: Metadata
    id?: string
  }
  export interface DocumentInterface<Metadata extends Record<string, any> = Record<string, any>> {
    pageContent: string
    metadata: Metadata
    id?: string
  }
  export class Document<Metadata extends Record<string, any> = Record<string, any>> implements DocumentInput, DocumentInterface {
    pageContent: string
    metadata: Metadata
    id?: string
    constructor(fields: DocumentInput<Metadata>)
  }
}

declare module '@langchain/core/embeddings' {
  /** `dist/embeddings.d.ts` (`AsyncCallerParams` trimmed to its numeric options). */
  export type EmbeddingsParams = { maxConcurrency?: number; maxRetries?: number }
  export interface EmbeddingsInterface<TOutput = number[]> {
    embedDocuments(documents: string[]): Promise<TOutput[]>
    embedQuery(document: string): Promise<TOutput>
  }
  export abstract class Embeddings<TOutput = number[]> implements EmbeddingsInterface<TOutput> {
    constructor(params: EmbeddingsParams)
    abstract embedDocuments(documents: string[]): Promise<TOutput[]>
    abstract embedQuery(document: string): Promise<TOutput>
  }
}

declare module '@langchain/core/callbacks/base' {
  /** `dist/callbacks/base.d.ts` (trimmed: handlers are passed through, never called here). */
  export interface CallbackHandlerMethods {
    handleRetrieverStart?(...args: any[]): any
    handleRetrieverEnd?(...args: any[]): any
    handleRetrieverError?(...args: any[]): any
  }
  export abstract class BaseCallbackHandler implements CallbackHandlerMethods {
    abstract name: string
  }
}

declare module '@langchain/core/callbacks/manager' {
  import type { BaseCallbackHandler, CallbackHandlerMethods } from '@langchain/core/callbacks/base'
  /** `dist/callbacks/manager.d.ts` (trimmed). */
  export class CallbackManager {
    readonly handlers: BaseCallbackHandler[]
  }
  export class CallbackManagerForRetrieverRun {
    getChild(tag?: string): CallbackManager
  }
  export type Callbacks = CallbackManager | (BaseCallbackHandler | CallbackHandlerMethods)[]
}

declare module '@langchain/core/runnables' {
  import type { Callbacks } from '@langchain/core/callbacks/manager'
  /** `dist/runnables/types.d.ts` (trimmed). */
  export interface RunnableConfig {
    callbacks?: Callbacks
    tags?: string[]
    metadata?: Record<string, unknown>
    runName?: string
    signal?: AbortSignal
  }
}

declare module '@langchain/core/retrievers' {
  import type { Callbacks, CallbackManagerForRetrieverRun } from '@langchain/core/callbacks/manager'
  import type { DocumentInterface } from '@langchain/core/documents'
  import type { RunnableConfig } from '@langchain/core/runnables'
  /** `dist/retrievers/index.d.ts` (trimmed: the `Runnable` base reduced to `invoke`). */
  export interface BaseRetrieverInput {
    callbacks?: Callbacks
    tags?: string[]
    metadata?: Record<string, unknown>
    verbose?: boolean
  }
  export interface BaseRetrieverInterface<Metadata extends Record<string, any> = Record<string, any>> {
    invoke(input: string, options?: RunnableConfig): Promise<DocumentInterface<Metadata>[]>
  }
  export abstract class BaseRetriever<Metadata extends Record<string, any> = Record<string, any>> implements BaseRetrieverInterface {
    callbacks?: Callbacks
    tags?: string[]
    metadata?: Record<string, unknown>
    verbose?: boolean
    constructor(fields?: BaseRetrieverInput)
    _getRelevantDocuments(_query: string, _callbacks?: CallbackManagerForRetrieverRun): Promise<DocumentInterface<Metadata>[]>
    invoke(input: string, options?: RunnableConfig): Promise<DocumentInterface<Metadata>[]>
  }
}

declare module '@langchain/core/vectorstores' {
  import type { Callbacks, CallbackManagerForRetrieverRun } from '@langchain/core/callbacks/manager'
  import type { DocumentInterface } from '@langchain/core/documents'
  import type { EmbeddingsInterface } from '@langchain/core/embeddings'
  import type { Serializable } from '@langchain/core/load/serializable'
  import type { BaseRetriever, BaseRetrieverInput, BaseRetrieverInterface } from '@langchain/core/retrievers'
  /** `dist/vectorstores.d.ts` (trimmed: `SaveableVectorStore` left out). */
  type AddDocumentOptions = Record<string, any>
  export type MaxMarginalRelevanceSearchOptions<FilterType> = {
    k: number
    fetchK?: number
    lambda?: number
    filter?: FilterType
  }
  export type VectorStoreRetrieverMMRSearchKwargs = {
    fetchK?: number
    lambda?: number
  }
  export type VectorStoreRetrieverInput<V extends VectorStoreInterface> = BaseRetrieverInput &
    (
      | { vectorStore: V; k?: number; filter?: V['FilterType']; searchType?: 'similarity' }
      | { vectorStore: V; k?: number; filter?: V['FilterType']; searchType: 'mmr'; searchKwargs?: VectorStoreRetrieverMMRSearchKwargs }
    )
  export interface VectorStoreRetrieverInterface<V extends VectorStoreInterface = VectorStoreInterface> extends BaseRetrieverInterface {
    vectorStore: V
    addDocuments(documents: DocumentInterface[], options?: AddDocumentOptions): Promise<string[] | void>
  }
  export class VectorStoreRetriever<V extends VectorStoreInterface = VectorStoreInterface>
    extends BaseRetriever
    implements VectorStoreRetrieverInterface
  {
    static lc_name(): string
    get lc_namespace(): string[]
    vectorStore: V
    k: number
    searchType: string
    searchKwargs?: VectorStoreRetrieverMMRSearchKwargs
    filter?: V['FilterType']
    _vectorstoreType(): string
    constructor(fields: VectorStoreRetrieverInput<V>)
    _getRelevantDocuments(query: string, runManager?: CallbackManagerForRetrieverRun): Promise<DocumentInterface[]>
    addDocuments(documents: DocumentInterface[], options?: AddDocumentOptions): Promise<string[] | void>
  }
  export interface VectorStoreInterface extends Serializable {
    FilterType: object | string
    embeddings: EmbeddingsInterface
    _vectorstoreType(): string
    addVectors(vectors: number[][], documents: DocumentInterface[], options?: AddDocumentOptions): Promise<string[] | void>
    addDocuments(documents: DocumentInterface[], options?: AddDocumentOptions): Promise<string[] | void>
    delete(_params?: Record<string, any>): Promise<void>
    similaritySearchVectorWithScore(query: number[], k: number, filter?: this['FilterType']): Promise<[DocumentInterface, number][]>
    similaritySearch(query: string, k?: number, filter?: this['FilterType'], callbacks?: Callbacks): Promise<DocumentInterface[]>
    similaritySearchWithScore(
      query: string,
      k?: number,
      filter?: this['FilterType'],
      callbacks?: Callbacks,
    ): Promise<[DocumentInterface, number][]>
    maxMarginalRelevanceSearch?(
      query: string,
      options: MaxMarginalRelevanceSearchOptions<this['FilterType']>,
      callbacks: Callbacks | undefined,
    ): Promise<DocumentInterface[]>
    asRetriever(
      kOrFields?: number | Partial<VectorStoreRetrieverInput<this>>,
      filter?: this['FilterType'],
      callbacks?: Callbacks,
      tags?: string[],
      metadata?: Record<string, unknown>,
      verbose?: boolean,
    ): VectorStoreRetriever<this>
  }
  export abstract class VectorStore extends Serializable implements VectorStoreInterface {
    FilterType: object | string
    lc_namespace: string[]
    embeddings: EmbeddingsInterface
    constructor(embeddings: EmbeddingsInterface, dbConfig: Record<string, any>)
    abstract _vectorstoreType(): string
    abstract addVectors(vectors: number[][], documents: DocumentInterface[], options?: AddDocumentOptions): Promise<string[] | void>
    abstract addDocuments(documents: DocumentInterface[], options?: AddDocumentOptions): Promise<string[] | void>
    delete(_params?: Record<string, any>): Promise<void>
    abstract similaritySearchVectorWithScore(
      query: number[],
      k: number,
      filter?: this['FilterType'],
    ): Promise<[DocumentInterface, number][]>
    similaritySearch(
      query: string,
      k?: number,
      filter?: this['FilterType'] | undefined,
      _callbacks?: Callbacks | undefined,
    ): Promise<DocumentInterface[]>
    similaritySearchWithScore(
      query: string,
      k?: number,
      filter?: this['FilterType'] | undefined,
      _callbacks?: Callbacks | undefined,
    ): Promise<[DocumentInterface, number][]>
    maxMarginalRelevanceSearch?(
      query: string,
      options: MaxMarginalRelevanceSearchOptions<this['FilterType']>,
      _callbacks: Callbacks | undefined,
    ): Promise<DocumentInterface[]>
    static fromTexts(
      _texts: string[],
      _metadatas: object[] | object,
      _embeddings: EmbeddingsInterface,
      _dbConfig: Record<string, any>,
    ): Promise<VectorStore>
    static fromDocuments(_docs: DocumentInterface[], _embeddings: EmbeddingsInterface, _dbConfig: Record<string, any>): Promise<VectorStore>
    asRetriever(
      kOrFields?: number | Partial<VectorStoreRetrieverInput<this>>,
      filter?: this['FilterType'],
      callbacks?: Callbacks,
      tags?: string[],
      metadata?: Record<string, unknown>,
      verbose?: boolean,
    ): VectorStoreRetriever<this>
  }
}

// What the conformance suite (test/adapters/langchain) uses besides the adapter's own imports.

declare module '@langchain/core/utils/testing' {
  import { Embeddings, type EmbeddingsParams } from '@langchain/core/embeddings'
  /** `dist/utils/testing/embeddings.d.ts`. */
  interface SyntheticEmbeddingsParams extends EmbeddingsParams {
    vectorSize: number
  }
  export class SyntheticEmbeddings extends Embeddings implements SyntheticEmbeddingsParams {
    vectorSize: number
    constructor(params?: SyntheticEmbeddingsParams)
    embedDocuments(documents: string[]): Promise<number[][]>
    embedQuery(document: string): Promise<number[]>
  }
}

declare module '@langchain/core/document_loaders/base' {
  import type { DocumentInterface } from '@langchain/core/documents'
  /** `dist/document_loaders/base.d.ts` (trimmed). */
  export interface DocumentLoader {
    load(): Promise<DocumentInterface[]>
  }
  export abstract class BaseDocumentLoader implements DocumentLoader {
    abstract load(): Promise<DocumentInterface[]>
  }
}

declare module '@langchain/core/indexing' {
  import type { DocumentInterface } from '@langchain/core/documents'
  import type { BaseDocumentLoader } from '@langchain/core/document_loaders/base'
  import type { VectorStore } from '@langchain/core/vectorstores'
  /** `dist/indexing/record_manager.d.ts` and `dist/indexing/base.d.ts` (trimmed). */
  export type UpdateOptions = { groupIds?: (string | null)[]; timeAtLeast?: number }
  export type ListKeyOptions = { before?: number; after?: number; groupIds?: (string | null)[]; limit?: number }
  export interface RecordManagerInterface {
    createSchema(): Promise<void>
    getTime(): Promise<number>
    update(keys: string[], updateOptions: UpdateOptions): Promise<void>
    exists(keys: string[]): Promise<boolean[]>
    listKeys(options: ListKeyOptions): Promise<string[]>
    deleteKeys(keys: string[]): Promise<void>
  }
  type IndexingResult = { numAdded: number; numDeleted: number; numUpdated: number; numSkipped: number }
  type StringOrDocFunc = string | ((doc: DocumentInterface) => string)
  export type CleanupMode = 'full' | 'incremental'
  export type IndexOptions = {
    batchSize?: number
    cleanup?: CleanupMode
    sourceIdKey?: StringOrDocFunc
    cleanupBatchSize?: number
    forceUpdate?: boolean
  }
  interface IndexArgs {
    docsSource: BaseDocumentLoader | DocumentInterface[]
    recordManager: RecordManagerInterface
    vectorStore: VectorStore
    options?: IndexOptions
  }
  export function index(args: IndexArgs): Promise<IndexingResult>
}
