/**
 * LlamaIndex.TS as pgscale's main build sees it: the framework is not installed there (it is an
 * optional peer, installed in examples/llamaindex by `npm run adapters:install`), so these ambient
 * declarations stand in for it. Each is a faithful subset of @llamaindex/core 0.6.23 and
 * llamaindex 0.12.1 (same names, same signatures, members left out where nothing here uses
 * them). `npx tsc -p tsconfig.adapters.json` excludes this file and checks the adapter and its
 * conformance suite against the real packages.
 *
 * The first three modules are what the adapter itself uses; the rest (the sentence splitter, the
 * LLM mock, `llamaindex`'s index and settings) only what the conformance suite and the example use.
 */

declare module '@llamaindex/core/schema' {
  export enum NodeRelationship {
    SOURCE = 'SOURCE',
    PREVIOUS = 'PREVIOUS',
    NEXT = 'NEXT',
    PARENT = 'PARENT',
    CHILD = 'CHILD',
  }
  export enum ObjectType {
    TEXT = 'TEXT',
    IMAGE = 'IMAGE',
    INDEX = 'INDEX',
    DOCUMENT = 'DOCUMENT',
    IMAGE_DOCUMENT = 'IMAGE_DOCUMENT',
  }
  export enum MetadataMode {
    ALL = 'ALL',
    EMBED = 'EMBED',
    LLM = 'LLM',
    NONE = 'NONE',
  }
  export type Metadata = Record<string, any>
  export interface RelatedNodeInfo<T extends Metadata = Metadata> {
    nodeId: string
    nodeType?: ObjectType
    metadata: T
    hash?: string
  }
  export type RelatedNodeType<T extends Metadata = Metadata> = RelatedNodeInfo<T> | RelatedNodeInfo<T>[]
  export type BaseNodeParams<T extends Metadata = Metadata> = {
    id_?: string | undefined
    metadata?: T | undefined
    excludedEmbedMetadataKeys?: string[] | undefined
    excludedLlmMetadataKeys?: string[] | undefined
    relationships?: Partial<Record<NodeRelationship, RelatedNodeType<T>>> | undefined
    hash?: string | undefined
    embedding?: number[] | undefined
  }
  export abstract class BaseNode<T extends Metadata = Metadata> {
    id_: string
    embedding: number[] | undefined
    metadata: T
    excludedEmbedMetadataKeys: string[]
    excludedLlmMetadataKeys: string[]
    relationships: Partial<Record<NodeRelationship, RelatedNodeType<T>>>
    protected constructor(init?: BaseNodeParams<T>)
    abstract get type(): ObjectType
    abstract getContent(metadataMode: MetadataMode): string
    abstract setContent(value: unknown): void
    get sourceNode(): RelatedNodeInfo<T> | undefined
    getEmbedding(): number[]
    toMutableJSON(): Record<string, any>
  }
  export type TextNodeParams<T extends Metadata = Metadata> = BaseNodeParams<T> & {
    text?: string | undefined
    textTemplate?: string | undefined
    startCharIdx?: number | undefined
    endCharIdx?: number | undefined
    metadataSeparator?: string | undefined
  }
  export class TextNode<T extends Metadata = Metadata> extends BaseNode<T> {
    text: string
    constructor(init?: TextNodeParams<T>)
    get type(): ObjectType
    getContent(metadataMode?: MetadataMode): string
    setContent(value: string): void
    getText(): string
  }
  export class Document<T extends Metadata = Metadata> extends TextNode<T> {
    constructor(init?: TextNodeParams<T>)
  }
  export interface NodeWithScore<T extends Metadata = Metadata> {
    node: BaseNode<T>
    score?: number | undefined
  }
  export class EngineResponse {
    sourceNodes: NodeWithScore[] | undefined
    message: { content: string | Array<{ type: string }>; role: string }
    private constructor()
    toString(): string
  }
}

declare module '@llamaindex/core/embeddings' {
  import type { BaseNode } from '@llamaindex/core/schema'
  export abstract class BaseEmbedding {
    embedBatchSize: number
    protected constructor(transformFn?: (nodes: BaseNode[], options?: object) => Promise<BaseNode[]>)
    abstract getTextEmbedding(text: string): Promise<number[]>
    getQueryEmbedding(query: { type: 'text'; text: string }): Promise<number[] | null>
    getTextEmbeddings: (texts: string[]) => Promise<Array<number[]>>
  }
}

declare module '@llamaindex/core/vector-store' {
  import type { BaseEmbedding } from '@llamaindex/core/embeddings'
  import type { BaseNode, Metadata } from '@llamaindex/core/schema'

  export function nodeToMetadata(node: BaseNode, removeText?: boolean, textField?: string, flatMetadata?: boolean): Metadata
  export type MetadataDictToNodeOptions = { fallback: Record<string, unknown> }
  export function metadataDictToNode(metadata: Metadata, options?: MetadataDictToNodeOptions): BaseNode
  export interface VectorStoreQueryResult {
    nodes?: BaseNode[]
    similarities: number[]
    ids: string[]
  }
  export enum VectorStoreQueryMode {
    DEFAULT = 'default',
    SPARSE = 'sparse',
    HYBRID = 'hybrid',
    SVM = 'svm',
    LOGISTIC_REGRESSION = 'logistic_regression',
    LINEAR_REGRESSION = 'linear_regression',
    MMR = 'mmr',
    SEMANTIC_HYBRID = 'semantic_hybrid',
  }
  export enum FilterOperator {
    EQ = '==',
    IN = 'in',
    GT = '>',
    LT = '<',
    NE = '!=',
    GTE = '>=',
    LTE = '<=',
    NIN = 'nin',
    ANY = 'any',
    ALL = 'all',
    TEXT_MATCH = 'text_match',
    CONTAINS = 'contains',
    IS_EMPTY = 'is_empty',
  }
  export enum FilterCondition {
    AND = 'and',
    OR = 'or',
  }
  export type MetadataFilterValue = string | number | string[] | number[]
  export interface MetadataFilter {
    key: string
    value?: MetadataFilterValue
    operator: `${FilterOperator}`
  }
  export interface MetadataFilters {
    filters: Array<MetadataFilter>
    condition?: `${FilterCondition}`
  }
  export interface VectorStoreQuery<T = unknown> {
    queryEmbedding?: number[]
    similarityTopK: number
    docIds?: string[]
    queryStr?: string
    mode: VectorStoreQueryMode
    alpha?: number
    filters?: MetadataFilters | undefined
    mmrThreshold?: number
    customParams?: T | undefined
  }
  export type VectorStoreBaseParams = {
    embeddingModel?: BaseEmbedding | undefined
    embedModel?: BaseEmbedding | undefined
  }
  export abstract class BaseVectorStore<Client = unknown, T = unknown> {
    embedModel: BaseEmbedding
    abstract storesText: boolean
    isEmbeddingQuery?: boolean
    abstract client(): Client
    abstract add(embeddingResults: BaseNode[]): Promise<string[]>
    abstract delete(refDocId: string, deleteOptions?: object): Promise<void>
    abstract query(query: VectorStoreQuery<T>, options?: object): Promise<VectorStoreQueryResult>
    protected constructor(params?: VectorStoreBaseParams)
  }
}

declare module '@llamaindex/core/node-parser' {
  import type { TextNode } from '@llamaindex/core/schema'
  export class SentenceSplitter {
    chunkSize: number
    chunkOverlap: number
    constructor(params?: { chunkSize?: number | undefined; chunkOverlap?: number | undefined })
    getNodesFromDocuments(documents: TextNode[]): TextNode[]
  }
}

declare module '@llamaindex/core/llms' {
  export type LLMMetadata = {
    model: string
    temperature: number
    topP: number
    maxTokens?: number | undefined
    contextWindow: number
    structuredOutput: boolean
  }
  export interface LLM {
    metadata: LLMMetadata
  }
}

declare module '@llamaindex/core/llms/mock' {
  import type { LLM, LLMMetadata } from '@llamaindex/core/llms'
  export class MockLLM implements LLM {
    metadata: LLMMetadata
    constructor(options?: { timeBetweenToken?: number; responseMessage?: string; metadata?: LLMMetadata })
  }
}

declare module 'llamaindex' {
  import type { BaseEmbedding } from '@llamaindex/core/embeddings'
  import type { LLM } from '@llamaindex/core/llms'
  import type { BaseNode, Document, EngineResponse, NodeWithScore } from '@llamaindex/core/schema'
  import type {
    BaseVectorStore,
    MetadataFilters,
    VectorStoreBaseParams,
    VectorStoreQuery,
    VectorStoreQueryMode,
    VectorStoreQueryResult,
  } from '@llamaindex/core/vector-store'

  export const Settings: {
    llm: LLM
    embedModel: BaseEmbedding
    withEmbedModel<Result>(embedModel: BaseEmbedding, fn: () => Result): Result
  }
  type QueryType = string | { query: string }
  export class VectorIndexRetriever {
    retrieve(params: QueryType): Promise<NodeWithScore[]>
  }
  export class RetrieverQueryEngine {
    retrieve(query: QueryType): Promise<NodeWithScore[]>
    query(params: { query: QueryType; stream?: false }): Promise<EngineResponse>
  }
  export class VectorStoreIndex {
    embedModel?: BaseEmbedding | undefined
    private constructor()
    static fromVectorStore(vectorStore: BaseVectorStore): Promise<VectorStoreIndex>
    asRetriever(options?: {
      filters?: MetadataFilters | undefined
      mode?: VectorStoreQueryMode
      customParams?: unknown | undefined
      similarityTopK?: number | undefined
    }): VectorIndexRetriever
    asQueryEngine(options?: { preFilters?: MetadataFilters; customParams?: unknown; similarityTopK?: number }): RetrieverQueryEngine
    insert(document: Document): Promise<void>
    insertNodes(nodes: BaseNode[]): Promise<void>
    deleteRefDoc(refDocId: string, deleteFromDocStore?: boolean): Promise<void>
  }
  export class SimpleVectorStore extends BaseVectorStore {
    storesText: boolean
    constructor(init?: VectorStoreBaseParams)
    client(): null
    add(embeddingResults: BaseNode[]): Promise<string[]>
    delete(refDocId: string): Promise<void>
    query(query: VectorStoreQuery): Promise<VectorStoreQueryResult>
  }
}
