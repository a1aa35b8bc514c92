/**
 * What the Mastra adapter uses of `@mastra/core`, declared for the main build, which does not
 * install Mastra (an optional peer dependency that declares Node >= 22.13). Copied from
 * @mastra/core 1.71.0's own declarations (dist/vector/vector.d.ts, types.d.ts, validation.d.ts,
 * filter/base.d.ts, error/index.d.ts) and cut to what the adapter touches; `npx tsc -p
 * tsconfig.adapters.json` typechecks the adapter against the real package instead of this file.
 */

declare module '@mastra/core/error' {
  export enum ErrorDomain {
    TOOL = 'TOOL',
    AGENT = 'AGENT',
    MCP = 'MCP',
    AGENT_NETWORK = 'AGENT_NETWORK',
    MASTRA_SERVER = 'MASTRA_SERVER',
    MASTRA_OBSERVABILITY = 'MASTRA_OBSERVABILITY',
    MASTRA_WORKFLOW = 'MASTRA_WORKFLOW',
    MASTRA_VOICE = 'MASTRA_VOICE',
    MASTRA_VECTOR = 'MASTRA_VECTOR',
    MASTRA_MEMORY = 'MASTRA_MEMORY',
    LLM = 'LLM',
    EVAL = 'EVAL',
    SCORER = 'SCORER',
    A2A = 'A2A',
    MASTRA_INSTANCE = 'MASTRA_INSTANCE',
    MASTRA = 'MASTRA',
    DEPLOYER = 'DEPLOYER',
    STORAGE = 'STORAGE',
    MODEL_ROUTER = 'MODEL_ROUTER',
  }

  export enum ErrorCategory {
    UNKNOWN = 'UNKNOWN',
    USER = 'USER',
    SYSTEM = 'SYSTEM',
    THIRD_PARTY = 'THIRD_PARTY',
  }

  type Scalar = null | boolean | number | string

  export interface IErrorDefinition<DOMAIN, CATEGORY> {
    id: Uppercase<string>
    text?: string
    domain: DOMAIN
    category: CATEGORY
    details?: Record<string, Scalar>
  }

  export class MastraBaseError<DOMAIN, CATEGORY> extends Error {
    readonly id: Uppercase<string>
    readonly domain: DOMAIN
    readonly category: CATEGORY
    readonly details?: Record<string, Scalar>
    readonly message: string
    constructor(
      errorDefinition: IErrorDefinition<DOMAIN, CATEGORY>,
      originalError?: string | Error | MastraBaseError<DOMAIN, CATEGORY> | unknown,
    )
  }

  export class MastraError extends MastraBaseError<`${ErrorDomain}`, `${ErrorCategory}`> {}
}

declare module '@mastra/core/vector' {
  type BasicOperator = '$eq' | '$ne'
  type NumericOperator = '$gt' | '$gte' | '$lt' | '$lte'
  type LogicalOperator = '$and' | '$not' | '$nor' | '$or'
  type ArrayOperator = '$all' | '$in' | '$nin' | '$elemMatch'
  type ElementOperator = '$exists'
  type RegexOperator = '$regex' | '$options'
  type EmptyObject = Record<string, never>

  export type FilterValue = string | number | boolean | Date | null | undefined | EmptyObject
  export type VectorFieldValue = FilterValue | FilterValue[]

  export type OperatorValueMap<Op extends string = string, ValueMap extends Record<string, any> = any> = {
    $eq: FilterValue
    $ne: FilterValue
    $gt: number | string | Date
    $gte: number | string | Date
    $lt: number | string | Date
    $lte: number | string | Date
    $all: FilterValue[]
    $in: FilterValue[]
    $nin: FilterValue[]
    $elemMatch: Record<string, unknown>
    $exists: boolean
    $regex: string | RegExp
    $options: string
    $not: OperatorCondition<Op, ValueMap> | RegExp
  }

  export type LogicalOperatorValueMap = { $and: 'array'; $or: 'array'; $nor: 'array'; $not: 'object' }

  export type BlacklistedRootOperators =
    '$eq' | '$ne' | '$gt' | '$gte' | '$lt' | '$lte' | '$in' | '$nin' | '$all' | '$exists' | '$regex' | '$options' | '$elemMatch'

  export type VectorFilter<
    Op extends keyof ValueMap = keyof OperatorValueMap,
    ValueMap extends Record<string, any> = OperatorValueMap,
    LogicalValueMap extends Record<string, any> = LogicalOperatorValueMap,
    Blacklisted extends string = BlacklistedRootOperators,
    FieldValue = VectorFieldValue,
  > = FilterCondition<Op, ValueMap, LogicalValueMap, Blacklisted, FieldValue> | null | undefined

  type FilterCondition<
    Op extends keyof ValueMap = keyof OperatorValueMap,
    ValueMap extends Record<string, any> = OperatorValueMap,
    LogicalValueMap extends Record<string, any> = LogicalOperatorValueMap,
    Blacklisted extends string = BlacklistedRootOperators,
    FieldValue = VectorFieldValue,
  > = (FieldCondition<Op, ValueMap, FieldValue> | LogicalCondition<Op, ValueMap, LogicalValueMap>) & ForbiddenRootOperators<Blacklisted>

  type FieldCondition<
    Op extends keyof ValueMap = keyof OperatorValueMap,
    ValueMap extends Record<string, any> = OperatorValueMap,
    FieldValue = VectorFieldValue,
  > = { [field: string]: OperatorCondition<Op, ValueMap> | FieldValue }

  type ForbiddenRootOperators<Blacklisted extends string> = { [K in Blacklisted]?: never }

  type LogicalCondition<
    Op extends keyof ValueMap = keyof OperatorValueMap,
    ValueMap extends Record<string, any> = OperatorValueMap,
    LogicalValueMap extends Record<string, any> = LogicalOperatorValueMap,
  > = {
    [K in keyof LogicalValueMap]: LogicalValueMap[K] extends 'array'
      ? { [P in K]: Array<LogicalBranch<Op, ValueMap, LogicalValueMap>> }
      : { [P in K]: LogicalBranch<Op, ValueMap, LogicalValueMap> }
  }[keyof LogicalValueMap]

  type LogicalBranch<
    Op extends keyof ValueMap = keyof OperatorValueMap,
    ValueMap extends Record<string, any> = OperatorValueMap,
    LogicalValueMap extends Record<string, any> = LogicalOperatorValueMap,
  > = FieldCondition<Op, ValueMap> | LogicalCondition<Op, ValueMap, LogicalValueMap>

  type OperatorCondition<Op extends keyof ValueMap = keyof OperatorValueMap, ValueMap extends Record<string, any> = OperatorValueMap> = {
    [K in Exclude<Op, '$and' | '$or' | '$nor'>]?: ValueMap[K]
  }

  export type OperatorSupport = {
    logical?: LogicalOperator[]
    array?: ArrayOperator[]
    basic?: BasicOperator[]
    numeric?: NumericOperator[]
    element?: ElementOperator[]
    regex?: RegexOperator[]
    custom?: string[]
  }

  export abstract class BaseFilterTranslator<Filter = VectorFilter, Result = Filter> {
    abstract translate(filter: Filter): Result
    static readonly DEFAULT_OPERATORS: {
      logical: LogicalOperator[]
      basic: BasicOperator[]
      numeric: NumericOperator[]
      array: ArrayOperator[]
      element: '$exists'[]
      regex: RegexOperator[]
    }
    protected getSupportedOperators(): OperatorSupport
    protected isEmpty(obj: any): boolean
    protected validateFilter(filter: Filter): void
  }

  export interface SparseVector {
    indices: number[]
    values: number[]
  }

  export interface QueryResult {
    id: string
    score: number
    metadata?: Record<string, any>
    vector?: number[]
    document?: string
  }

  export interface IndexStats {
    dimension: number
    count: number
    metric?: 'cosine' | 'euclidean' | 'dotproduct'
  }

  export interface UpsertVectorParams<Filter = VectorFilter> {
    indexName: string
    vectors: number[][]
    metadata?: Record<string, any>[]
    ids?: string[]
    sparseVectors?: SparseVector[]
    deleteFilter?: Filter
  }

  export interface CreateIndexParams {
    indexName: string
    dimension: number
    metric?: 'cosine' | 'euclidean' | 'dotproduct'
  }

  export interface QueryVectorParams<Filter = VectorFilter> {
    indexName: string
    queryVector?: number[]
    topK?: number
    filter?: Filter
    includeVector?: boolean
    sparseVector?: SparseVector
  }

  export interface DescribeIndexParams {
    indexName: string
  }

  export interface DeleteIndexParams {
    indexName: string
  }

  export type UpdateVectorParams<Filter = VectorFilter> =
    | {
        indexName: string
        id: string
        filter?: never
        update: { vector?: number[]; metadata?: Record<string, any> }
      }
    | {
        indexName: string
        id?: never
        filter: Filter
        update: { vector?: number[]; metadata?: Record<string, any> }
      }

  export interface DeleteVectorParams {
    indexName: string
    id: string
  }

  export interface DeleteVectorsParams<Filter = VectorFilter> {
    indexName: string
    ids?: string[]
    filter?: Filter
  }

  export abstract class MastraVector<Filter = VectorFilter> {
    id: string
    disableInit: boolean
    name?: string
    constructor({ id, disableInit }: { id: string; disableInit?: boolean })
    get indexSeparator(): string
    abstract query(params: QueryVectorParams<Filter>): Promise<QueryResult[]>
    abstract upsert(params: UpsertVectorParams): Promise<string[]>
    abstract createIndex(params: CreateIndexParams): Promise<void>
    abstract listIndexes(): Promise<string[]>
    abstract describeIndex(params: DescribeIndexParams): Promise<IndexStats>
    abstract deleteIndex(params: DeleteIndexParams): Promise<void>
    abstract updateVector(params: UpdateVectorParams<Filter>): Promise<void>
    abstract deleteVector(params: DeleteVectorParams): Promise<void>
    abstract deleteVectors(params: DeleteVectorsParams<Filter>): Promise<void>
    protected validateExistingIndex(indexName: string, dimension: number, metric: string): Promise<void>
  }

  export function validateUpsertInput(
    storeName: string,
    vectors: number[][] | undefined | null,
    metadata?: Record<string, any>[] | null,
    ids?: string[] | null,
  ): void
  export function validateTopK(storeName: string, topK: number): void
  export function validateVectorValues(storeName: string, vectors: number[][]): void
}
