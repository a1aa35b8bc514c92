import { beforeAll, expect, it } from 'vitest'
import { matchesFilter } from '../../../src/index.js'
import { seededRandom } from '../../../src/bench-kit.js'
import { describeUnless } from '../../support/skip.js'
import { useTestDatabase } from '../../support/test-database.js'
import { DIM, indexName, MASTRA_MISSING, type PgScaleVector } from './mastra-kit.js'

/**
 * The seeded differential test of the Mastra filter translator: seeded random Mastra filters (the
 * operators pgscale/mastra maps — `$eq $ne $gt $gte $lt $lte $in $nin $all $exists $size
 * $elemMatch`, `$not` on a field and at the top, `$and $or $nor` nested and empty, `$contains` with
 * an array — and Mastra's shorthands) over seeded vectors with seeded random metadata, asked of the
 * adapter (`query` with a query vector and without one, `topK` past the rows) on a plain index and
 * on one with metadata indexes; the matched ids must equal the reference's.
 *
 * The reference. Mastra's metadata-filter reference (its docs page "Metadata filters", shipped in
 * @mastra/pg's dist/docs/references/reference-rag-metadata-filters.md) defines the language as
 * "based on MongoDB/Sift query syntax": where a filter is written in MongoDB's own forms, the
 * reference is pgscale's MongoDB evaluator, `matchesFilter`, on the ORIGINAL Mastra filter. Where
 * Mastra's forms mean something MongoDB's would not, `mastraMatches` below evaluates them as Mastra
 * does, each leaf still by `matchesFilter`:
 * - an array value, `{ f: [a, b] }`, is `$in` (MongoDB: the array itself): @mastra/pg's
 *   PGFilterTranslator (`translateNode`: an array node becomes `$in`), pgscale's
 *   docs/adapters/mastra.md "Filters" table;
 * - a nested object without operators, `{ owner: { team: 'x' } }`, is the path `owner.team`
 *   (MongoDB: the whole object equals it): not on the docs page (it names dot notation for nested
 *   fields); @mastra/pg's PGFilterTranslator (`translateNode` extends the path, `newPath`);
 * - `$in`/`$nin`/`$all` with one value are a one-element list (MongoDB refuses it):
 *   PGFilterTranslator (`isArrayOperator` and not an array: `[value]`);
 * - `$not` at the top, `{ $not: { … } }`, is the negation of its filter: the docs page, rule 4
 *   ("Can be used at field level or top level");
 * - an empty `$and`/`$nor` matches everything, an empty `$or` nothing (MongoDB refuses them;
 *   the docs page's rule 3 says they "can't be empty", Mastra's `validateFilter` lets them through
 *   and @mastra/pg's SQL reads them so): docs/adapters/mastra.md "Filters" table;
 * - `$contains` with an array is every element present (`$all`): the docs page's custom operators
 *   list `$contains`; its array form is @mastra/pg's (`?&`).
 *
 * What the generator leaves out, with where the difference is documented:
 * - `Date` operands: pgscale compares them with ISO-8601 strings as instants (docs/adapters/mastra.md,
 *   "a `Date` with ISO-8601 timestamps as instants"); MongoDB never compares a date with a string;
 * - nested arrays, and `null` on a path through an array of objects (`reviews.by`): where
 *   pgscale's paths differ from MongoDB's (docs/store.md, "Where it differs from MongoDB");
 * - object operands of `$eq` (MongoDB's object equality is key-order sensitive; docs/store.md
 *   "Semantics": "object key order ignored");
 * - `$contains: []`: Mastra documents `$contains` as a substring match only; @mastra/pg's array
 *   form (`?&` of no keys) is true wherever the field is present, pgscale's `$all: []` nothing
 *   (docs/store.md "Semantics": "`[]` matches nothing") — not pinned here either way;
 * - refused forms: `$regex`, `$options`, `$contains` with a string, `$size` with an operator object,
 *   logical operators inside a field or `$elemMatch`.
 *
 * A second tenant holds a copy of every vector under other ids, so whatever a filter matches it
 * also matches there: none of them ever appears, and that tenant's own answer is the mirror image.
 * `PGSCALE_ADAPTER_FILTER_SEED` and `PGSCALE_ADAPTER_FILTER_CASES` replay another seed or run more cases.
 */
const t = useTestDatabase()
const SEED = process.env.PGSCALE_ADAPTER_FILTER_SEED ?? 'mastra-filter-differential'
const CASES = Number(process.env.PGSCALE_ADAPTER_FILTER_CASES ?? 300)
const ROWS = 100

type Rng = { next(): number; int(n: number): number }
type Meta = Record<string, unknown>
type Filter = Record<string, unknown>

const pick = <T>(r: Rng, xs: readonly T[]): T => xs[r.int(xs.length)]!
const some = <T>(r: Rng, xs: readonly T[], min: number, max: number): T[] =>
  Array.from({ length: min + r.int(max - min + 1) }, () => pick(r, xs))
const isPlainObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v)

// ---------------------------------------------------------------------------------------------
// Metadata: few values per key, so filters collide with rows; types mixed (5 and '5', null, booleans).

const CATEGORIES = ['books', 'home', 'electronics', 'Books', 'a b', 'ab']
const PRICES = [0, 5, 10, 10.5, 25, 50, 100, -1]
const TAGS = ['new', 'sale', 'premium', 'x', '']
const TEAMS = ['search', 'infra', 'Search']
const AUTHORS = ['u1', 'u2', 'u3']

function randomMetadata(r: Rng): Meta {
  const m: Meta = {}
  const put = (key: string, p: number, value: () => unknown) => {
    if (r.next() < p) m[key] = value()
  }
  put('category', 0.9, () => {
    const x = r.next()
    return x < 0.7 ? pick(r, CATEGORIES) : x < 0.8 ? pick(r, [5, '5']) : x < 0.9 ? null : some(r, CATEGORIES, 1, 2)
  })
  put('price', 0.85, () => (r.next() < 0.85 ? pick(r, PRICES) : pick(r, ['10', null, 'n/a'])))
  put('tags', 0.85, () => (r.next() < 0.8 ? some(r, TAGS, 0, 3) : pick(r, ['sale', null, 3])))
  put('nums', 0.7, () => (r.next() < 0.75 ? some(r, [1, 2, 3, 10], 0, 3) : pick(r, [2, '2'])))
  put('available', 0.8, () => (r.next() < 0.85 ? r.next() < 0.5 : 'true'))
  put('owner', 0.75, () => {
    if (r.next() < 0.1) return 'search'
    const owner: Meta = {}
    if (r.next() < 0.85) owner.team = pick(r, TEAMS)
    if (r.next() < 0.75) owner.level = pick(r, [1, 2, 3, '2'])
    return owner
  })
  put('reviews', 0.6, () =>
    Array.from({ length: r.int(4) }, () => {
      const review: Meta = { score: pick(r, [1, 2, 3, 4, 5]) }
      if (r.next() < 0.85) review.by = pick(r, AUTHORS)
      return review
    }),
  )
  return m
}

// ---------------------------------------------------------------------------------------------
// Filters.

/** The paths a field condition names, with the values its operands come from. */
const FIELDS: Record<string, readonly unknown[]> = {
  category: [...CATEGORIES, 5, '5', 'zzz'],
  price: [...PRICES, '10', 7, 'n/a'],
  tags: [...TAGS, 3, 'zz'],
  nums: [1, 2, 3, 10, '2', 0],
  available: [true, false, 'true'],
  'owner.team': [...TEAMS, 'x'],
  'owner.level': [1, 2, 3, '2', 0],
  'reviews.score': [1, 2, 3, 4, 5, '5'],
  'reviews.by': [...AUTHORS, 'u9'],
  missing: ['x', 1],
}
/** Paths that hold numbers, and paths that hold arrays (or walk through one). */
const NUMERIC = ['price', 'nums', 'owner.level', 'reviews.score']
const ARRAYS = ['tags', 'nums', 'category', 'reviews.score', 'reviews.by']
/** Paths where a `null` operand means what it means in MongoDB (not through an array of objects). */
const NULLABLE = (path: string) => !path.startsWith('reviews.')

/** A generated filter and the Mastra forms it uses (none: MongoDB's own forms only). */
interface Generated {
  filter: Filter
  forms: Set<string>
}

class FilterGenerator {
  readonly forms = new Set<string>()
  readonly drawn = new Map<string, number>()
  constructor(readonly r: Rng) {}

  count(op: string): void {
    this.drawn.set(op, (this.drawn.get(op) ?? 0) + 1)
  }

  generate(): Generated {
    this.forms.clear()
    return { filter: this.query(0, true), forms: new Set(this.forms) }
  }

  /** A query object: 1–3 field conditions and logical operators, ANDed (mostly one, so filters select rows). */
  query(depth: number, top = false): Filter {
    const { r } = this
    const out: Filter = {}
    const n = 1 + (r.next() < (top ? 0.35 : 0.2) ? 1 + (r.next() < 0.3 ? 1 : 0) : 0)
    for (let i = 0; i < n || Object.keys(out).length === 0; i++) {
      const x = r.next()
      if (depth < 2 && x < 0.22) {
        const op = pick(r, ['$and', '$or', '$nor'])
        if (op in out) continue
        const branches = r.next() < 0.08 ? 0 : 1 + r.int(3)
        if (branches === 0) this.forms.add(`${op} []`)
        this.count(op)
        out[op] = Array.from({ length: branches }, () => this.query(depth + 1))
      } else if (depth < 2 && x < 0.3) {
        if ('$not' in out) continue
        this.forms.add('$not at the top')
        this.count('$not (top)')
        out.$not = this.query(depth + 1)
      } else {
        const [path, value] = this.field()
        if (path in out) continue
        out[path] = value
      }
    }
    return out
  }

  /** A field condition: `[path, value]`. */
  field(): [string, unknown] {
    const { r } = this
    const x = r.next()
    if (x < 0.08) {
      // A nested object without operators: Mastra's path.
      this.forms.add('a nested object')
      this.count('nested object')
      const inner: Filter = {}
      for (const key of ['team', 'level'].filter(() => r.next() < 0.7)) inner[key] = this.condition(`owner.${key}`)
      if (Object.keys(inner).length === 0) inner.team = this.condition('owner.team')
      return ['owner', inner]
    }
    if (x < 0.13) return ['reviews', { $elemMatch: this.elemMatchFields() }]
    const path = pick(r, Object.keys(FIELDS))
    return [path, this.condition(path)]
  }

  /** What a path must satisfy: a value, an array of values (Mastra's `$in`), or operators. */
  condition(path: string): unknown {
    const { r } = this
    const x = r.next()
    if (x < 0.2) {
      this.count('equality')
      return this.value(path)
    }
    if (x < 0.3) {
      this.forms.add('an array value')
      this.count('array value')
      return some(r, FIELDS[path]!, r.next() < 0.1 ? 0 : 1, 3)
    }
    return this.operators(path, 1 + (r.next() < 0.2 ? 1 : 0))
  }

  value(path: string): unknown {
    return this.r.next() < 0.08 && NULLABLE(path) ? null : pick(this.r, FIELDS[path]!)
  }

  /**
   * `count` operators on `path` (on the element itself where `path` is ''); no `$not` directly
   * inside a `$not`. Mostly operators and operands that suit the path (array operators on paths
   * that hold arrays, comparisons with the path's own type), so filters select rows; sometimes not.
   */
  operators(path: string, count: number, negated = false): Filter {
    const { r } = this
    const values = path === '' ? [...TAGS, 1, 2, 3, 10, '2'] : NULLABLE(path) ? [...FIELDS[path]!, null] : FIELDS[path]!
    const numeric = NUMERIC.includes(path) || (path === '' && r.next() < 0.5)
    const ordered = values.filter((v) =>
      r.next() < 0.9 ? typeof v === (numeric ? 'number' : 'string') : typeof v === 'number' || typeof v === 'string',
    )
    const list = (op: string, max: number) => {
      if (r.next() < 0.15) {
        this.forms.add(`${op} of one value`)
        return pick(r, values)
      }
      return some(r, values, r.next() < 0.1 ? 0 : 1, max)
    }
    const ops: Filter = {}
    const choices = ['$eq', '$ne', '$gt', '$gte', '$lt', '$lte', '$in', '$nin', '$exists', '$not']
    if (ARRAYS.includes(path) || r.next() < 0.15) choices.push('$all', '$size', '$contains')
    const allowed = choices.filter((c) => !(path === '' && ['$exists', '$size'].includes(c)) && !(negated && c === '$not'))
    while (Object.keys(ops).length < count) {
      const op = pick(r, allowed)
      if (op in ops) continue
      this.count(op)
      switch (op) {
        case '$eq':
        case '$ne':
          ops[op] = path === 'tags' && r.next() < 0.1 ? some(r, TAGS, 0, 2) : path === '' ? pick(r, values) : this.value(path)
          break
        case '$gt':
        case '$gte':
        case '$lt':
        case '$lte':
          ops[op] = pick(r, ordered.length > 0 ? ordered : [0])
          break
        case '$in':
        case '$nin':
          ops[op] = list(op, 4)
          break
        case '$all':
          ops[op] = list(op, 2)
          break
        case '$contains':
          this.forms.add('$contains of an array')
          ops[op] = some(r, values, 1, 2)
          break
        case '$exists':
          ops[op] = r.next() < 0.5
          break
        case '$size':
          ops[op] = r.int(4)
          break
        case '$not':
          ops[op] = this.operators(path, 1, true)
          break
      }
    }
    return ops
  }

  /** `$elemMatch` of the review objects' fields (Mastra's shorthands allowed inside). */
  elemMatchFields(): Filter {
    const { r } = this
    this.count('$elemMatch (fields)')
    const out: Filter = {}
    for (const key of ['score', 'by'].filter(() => r.next() < 0.7)) out[key] = this.condition(`reviews.${key}`)
    if (Object.keys(out).length === 0) out.score = this.condition('reviews.score')
    return out
  }
}

// ---------------------------------------------------------------------------------------------
// The reference: @mastra/pg's meaning, written here from its SQL (sql-builder in @mastra/pg 1.27):
// a condition is true, false or unknown (SQL NULL: the field missing or null), NOT/$nor/$not keep
// unknown unknown, AND/OR are Kleene's; the values themselves compare by pgscale's leaf rules
// (matchesFilter), except that equality compares texts (4 and '4', true and 'true'). A condition is
// evaluated as the pair (is it true, is it false): on an array pgscale's leaves look at every
// element, so a range can be both (some element below, some above) where @mastra/pg sees no number
// at all — docs/adapters/mastra.md says so; the operator table covers scalar fields.

interface Truth {
  t: boolean
  f: boolean
}
const not = (x: Truth): Truth => ({ t: x.f, f: x.t })
const and = (xs: Truth[]): Truth => ({ t: xs.every((x) => x.t), f: xs.some((x) => x.f) })
const or = (xs: Truth[]): Truth => ({ t: xs.some((x) => x.t), f: xs.every((x) => x.f) })
const UNKNOWN: Truth = { t: false, f: false }
const known = (t: boolean): Truth => ({ t, f: !t })

/** Whether `meta` matches the Mastra filter `filter` (it is true). */
function mastraMatches(meta: Meta, filter: Filter): boolean {
  return truth(meta, filter).t
}

function truth(meta: Meta, filter: Filter): Truth {
  return and(
    Object.entries(filter).map(([key, value]) => {
      switch (key) {
        case '$and':
          return and((value as Filter[]).map((f) => truth(meta, f)))
        case '$or':
          return or((value as Filter[]).map((f) => truth(meta, f)))
        case '$nor':
          return not(or((value as Filter[]).map((f) => truth(meta, f))))
        case '$not':
          return not(truth(meta, value as Filter))
        default:
          return fieldTruth(meta, key, value)
      }
    }),
  )
}

function fieldTruth(meta: Meta, path: string, value: unknown): Truth {
  if (Array.isArray(value)) return opTruth(meta, path, '$in', value)
  if (isPlainObject(value) && Object.keys(value).length > 0) {
    if (Object.keys(value).some((k) => k.startsWith('$'))) return and(Object.entries(value).map(([op, v]) => opTruth(meta, path, op, v)))
    return and(Object.entries(value).map(([key, inner]) => fieldTruth(meta, `${path}.${key}`, inner)))
  }
  return opTruth(meta, path, '$eq', value)
}

/** The values of the same text as `v` in @mastra/pg's comparisons. */
function sameText(v: unknown): unknown[] {
  if (typeof v === 'number') return [v, String(v)]
  if (typeof v === 'boolean') return [v, String(v)]
  if (v === 'true' || v === 'false') return [v, v === 'true']
  if (typeof v === 'string' && v.trim() !== '' && String(Number(v)) === v) return [v, Number(v)]
  return [v]
}

const NUMERIC_STRING = (v: unknown) => typeof v === 'string' && v.trim() !== '' && Number.isFinite(Number(v))
const FLIP: Record<string, string> = { $gt: '$lte', $gte: '$lt', $lt: '$gte', $lte: '$gt' }

function opTruth(meta: Meta, path: string, op: string, operand: unknown): Truth {
  const mf = (f: Filter) => matchesFilter(meta, f)
  const absent = mf({ [path]: null })
  const list = Array.isArray(operand) ? operand : [operand]
  switch (op) {
    case '$eq':
      if (operand === null) return known(absent)
      return opTruth(meta, path, '$in', [operand])
    case '$ne':
      return not(opTruth(meta, path, '$eq', operand))
    case '$in': {
      if (list.length === 0) return known(false)
      const values = list.filter((v) => v !== null).flatMap(sameText)
      return {
        t: values.length > 0 && mf({ [path]: { $in: values } }),
        f: !list.includes(null) && mf({ [path]: { $nin: [...values, null] } }),
      }
    }
    case '$nin':
      return not(opTruth(meta, path, '$in', operand))
    case '$gt':
    case '$gte':
    case '$lt':
    case '$lte': {
      const numeric = typeof operand === 'number' || NUMERIC_STRING(operand)
      const n = numeric ? Number(operand) : operand
      return { t: mf({ [path]: { [op]: n } }), f: numeric && mf({ [path]: { [FLIP[op]!]: n } }) }
    }
    case '$all':
    case '$contains':
      if (list.length === 0) return op === '$all' ? known(false) : mf({ [path]: { $exists: true } }) ? known(true) : UNKNOWN
      if (!mf({ [path]: { $exists: true } })) return UNKNOWN
      return known(mf({ [path]: { $all: list } }))
    case '$not':
      return not(fieldTruth(meta, path, operand))
    case '$elemMatch': {
      // Generated on top-level keys, with the fields of object elements.
      const arr = meta[path]
      return known(Array.isArray(arr) && arr.some((el) => isPlainObject(el) && mastraMatches(el, operand as Filter)))
    }
    default: // $exists, $size: never unknown
      return known(mf({ [path]: { [op]: operand } }))
  }
}

/** Whether pgscale/mastra refuses `filter`: a comparison with a non-numeric operand under an odd number of negations. */
function refused(filter: unknown, negated = false): boolean {
  if (Array.isArray(filter)) return filter.some((f) => refused(f, negated))
  if (!isPlainObject(filter)) return false
  return Object.entries(filter).some(([key, value]) => {
    if (key in FLIP && negated && !(typeof value === 'number' || NUMERIC_STRING(value))) return true
    if (key === '$elemMatch') return refused(value, false) // its fields: conditions of their own on each element
    return refused(value, key === '$not' || key === '$nor' ? !negated : negated)
  })
}

describeUnless(MASTRA_MISSING)('pgscale/mastra: seeded random filters, the ids the reference evaluator gives', () => {
  let tenant: PgScaleVector
  let other: PgScaleVector
  const plainIndex = indexName('filter_diff')
  const indexedIndex = indexName('filter_diff_indexed')
  const r: Rng = seededRandom(`${SEED}:rows`)
  const metadata = Array.from({ length: ROWS }, () => randomMetadata(r))
  const ids = metadata.map((_, i) => `v${String(i).padStart(2, '0')}`)
  const vectors = ids.map(() => Array.from({ length: DIM }, () => r.next() - 0.3))
  const queryVector = Array.from({ length: DIM }, (_, i) => (i % 3 === 0 ? 1 : 0.1))

  beforeAll(async () => {
    const adapter = await import('../../../src/adapters/mastra/index.js')
    const vectorsOf = new adapter.PgScaleVectors({ id: 'pgscale-filter-diff', db: t.db })
    tenant = vectorsOf.forTenant('tenant-a')
    other = vectorsOf.forTenant('tenant-b')
    for (const name of [plainIndex, indexedIndex]) await tenant.createIndex({ indexName: name, dimension: DIM })
    await other.createIndex({ indexName: plainIndex, dimension: DIM })
    const store = await vectorsOf.store(indexedIndex, { tenantId: 'tenant-a' })
    for (const [path, type] of [
      ['category', 'string'],
      ['price', 'number'],
      ['available', 'boolean'],
      ['owner.team', 'string'],
      ['owner.level', 'number'],
    ] as const) {
      await store.createMetadataIndex(path, type)
    }
    for (const name of [plainIndex, indexedIndex]) {
      await tenant.upsert({ indexName: name, vectors, metadata: structuredClone(metadata), ids })
    }
    // The second tenant: the same vectors and metadata (so the same filters match them) under other ids.
    await other.upsert({ indexName: plainIndex, vectors, metadata: structuredClone(metadata), ids: ids.map((id) => `b-${id}`) })
  })

  it(`${CASES} random filters (seed ${JSON.stringify(SEED)}): the adapter matches the reference's ids, never another tenant's`, async () => {
    const r = seededRandom(SEED)
    const generator = new FilterGenerator(r)
    const query = async (vector: PgScaleVector, index: string, filter: Filter, withVector: boolean) =>
      (
        await vector.query({
          indexName: index,
          filter: filter as never,
          topK: 2 * ROWS,
          ...(withVector ? { queryVector } : {}),
        })
      )
        .map((hit) => hit.id)
        .sort()
    let matchedSome = 0
    let mongoForms = 0
    let refusals = 0
    for (let c = 0; c < CASES; c++) {
      const { filter, forms } = generator.generate()
      const withVector = c % 2 === 0
      // MongoDB's forms only: the reference is matchesFilter on the original filter (and the
      // explicit evaluator agrees with it); Mastra's forms: the explicit evaluator.
      if (forms.size === 0) mongoForms++
      if (refused(filter)) {
        refusals++
        await expect(query(tenant, plainIndex, filter, withVector), JSON.stringify(filter)).rejects.toThrow(
          /Unsupported operator: \$[gl]te?/,
        )
        continue
      }
      const reference = (m: Meta) => mastraMatches(m, filter)
      const expected = ids.filter((_, i) => reference(metadata[i]!))
      const answers: Array<[string, string[], string[]]> = [
        ['plain index', await query(tenant, plainIndex, filter, withVector), expected],
        ['indexed index', await query(tenant, indexedIndex, filter, withVector), expected],
        ['second tenant', await query(other, plainIndex, filter, withVector), expected.map((id) => `b-${id}`)],
      ]
      for (const [where, got, want] of answers) {
        if (JSON.stringify(got) === JSON.stringify(want)) continue
        const wrong = [...new Set([...got, ...want])].filter((id) => got.includes(id) !== want.includes(id)).slice(0, 4)
        throw new Error(
          `seed ${JSON.stringify(SEED)}, case ${c} (${where}, ${withVector ? 'with' : 'without'} a query vector): ${JSON.stringify(filter)}` +
            ` [Mastra forms: ${[...forms].join(', ') || 'none'}]\n` +
            wrong
              .map((id) => {
                const i = ids.indexOf(id.replace(/^b-/, ''))
                return `  ${id} ${JSON.stringify(metadata[i])}: adapter ${got.includes(id)}, reference ${want.includes(id)}`
              })
              .join('\n'),
        )
      }
      expect(answers[0]![1].some((id) => id.startsWith('b-'))).toBe(false)
      if (expected.length > 0 && expected.length < ROWS) matchedSome++
    }
    // The generator is useful: both kinds of filters, every operator drawn, most filters select some rows but not all.
    expect(mongoForms).toBeGreaterThan(CASES / 5)
    expect(CASES - mongoForms).toBeGreaterThan(CASES / 5)
    for (const op of ['$eq', '$ne', '$gt', '$gte', '$lt', '$lte', '$in', '$nin', '$all', '$exists', '$size', '$not', '$contains']) {
      expect(generator.drawn.get(op) ?? 0, op).toBeGreaterThan(CASES / 30)
    }
    for (const op of ['$and', '$or', '$nor', '$not (top)', '$elemMatch (fields)', 'nested object', 'array value']) {
      expect(generator.drawn.get(op) ?? 0, op).toBeGreaterThan(CASES / 50)
    }
    expect(matchedSome / CASES).toBeGreaterThan(0.5)
    expect(refusals).toBeLessThan(CASES / 5)
  }, 600_000)
})
