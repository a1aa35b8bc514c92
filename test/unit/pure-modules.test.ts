import { describe, expect, it } from 'vitest'
import { BinaryCopyWriter } from '../../src/bench-kit.js'
import { localMonth, monthOf, monthsBetween } from '../../src/bench-kit.js'
import { renderSessionSettings, renderSetLocal, settingsMessage } from '../../src/bench-kit.js'
import { arrayText, dollarQuote, inlineParameters } from '../../src/bench-kit.js'
import { toVectorLiteral } from '../../src/bench-kit.js'
import { conditionColumns, planShape } from '../../src/bench-kit.js'
import { combinerOf, tenantInput } from '../../src/bench-kit.js'
import { countRecall } from '../../src/bench-kit.js'
import { chunkSampleTarget, requiredOnSample, stillTuned } from '../../src/bench-kit.js'
import { filteredBudget, filterFromStored, filterToStored, fitExactCost, modelExactBelow, walkEfSearch } from '../../src/bench-kit.js'
import { filterCases, type FilterCaseSources } from '../../src/bench-kit.js'
import { shortQueries, splitQueries } from '../../bench/corpus/short-queries.js'
import { InvalidArgumentError, type TenantTuning } from '../../src/index.js'

/** The pure modules, without a database. */
describe('binary COPY encoding', () => {
  it('writes the header, a row of text, int4, jsonb and vector fields, and the trailer, big-endian', () => {
    const bytes = new BinaryCopyWriter().header().row(4).text('é').int4(-2).jsonb('{}').vector([1.5, -2]).trailer().take()
    const expected = Buffer.concat([
      Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1'),
      Buffer.from([0, 0, 0, 0, 0, 0, 0, 0]),
      Buffer.from([0, 4]),
      Buffer.from([0, 0, 0, 2, 0xc3, 0xa9]),
      Buffer.from([0, 0, 0, 4, 0xff, 0xff, 0xff, 0xfe]),
      Buffer.from([0, 0, 0, 3, 1, 0x7b, 0x7d]),
      Buffer.from([0, 0, 0, 12, 0, 2, 0, 0, 0x3f, 0xc0, 0, 0, 0xc0, 0, 0, 0]),
      Buffer.from([0xff, 0xff]),
    ])
    expect(bytes.equals(expected)).toBe(true)
  })

  it('grows past its initial buffer without losing bytes', () => {
    const writer = new BinaryCopyWriter(16).header()
    for (let i = 0; i < 100; i++) writer.row(1).text(`row ${i}`)
    const bytes = writer.trailer().take()
    expect(bytes.length).toBe(19 + 100 * 2 + [...Array(100).keys()].reduce((s, i) => s + 4 + `row ${i}`.length, 0) + 2)
  })
})

describe('local months', () => {
  it('places instants in the zone and reads calendar strings as local dates', () => {
    expect(localMonth(new Date('2025-04-01T05:59:59Z'), 'America/Mexico_City')).toBe('2025-03-01')
    expect(monthOf('2025-03-01', 'America/Mexico_City')).toBe('2025-03-01')
    expect(monthOf(new Date('2025-03-01T00:00:00Z'), 'America/Mexico_City')).toBe('2025-02-01')
    expect(monthOf('2024-12', 'Europe/Madrid')).toBe('2024-12-01')
    expect(() => monthOf('2025-02-30', 'UTC')).toThrow(InvalidArgumentError)
    expect(monthsBetween('2024-11-01', '2025-02-01')).toEqual(['2024-11-01', '2024-12-01', '2025-01-01', '2025-02-01'])
  })
})

describe('SET LOCAL rendering', () => {
  it('renders validated settings, with the Citus prefix when asked, and refuses anything else', () => {
    expect(renderSetLocal({ 'hnsw.ef_search': 100, 'hnsw.iterative_scan': 'relaxed_order' }, false)).toBe(
      "SET LOCAL hnsw.ef_search = '100'; SET LOCAL hnsw.iterative_scan = 'relaxed_order'",
    )
    expect(renderSetLocal({ work_mem: '64MB' }, true)).toBe("SET LOCAL citus.propagate_set_commands = 'local'; SET LOCAL work_mem = '64MB'")
    expect(renderSessionSettings({ maintenance_work_mem: '1GB' })).toEqual({
      set: "SET maintenance_work_mem = '1GB'",
      reset: 'RESET maintenance_work_mem',
    })
    for (const bad of [{ "x'; drop table t; --": 1 }, { work_mem: "1'; drop" }, { work_mem: Number.NaN }, { 'a.b.c': 1 }]) {
      expect(() => renderSetLocal(bad as never, false)).toThrow(InvalidArgumentError)
    }
  })

  it('never lets a quote, semicolon or space into the SQL, whatever the value (seeded property check)', () => {
    let seed = 7
    const next = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed)
    const alphabet = 'abcXYZ019_.-\'; \\"$()\n'
    for (let i = 0; i < 2000; i++) {
      const value = Array.from({ length: 1 + (next() % 12) }, () => alphabet[next() % alphabet.length]).join('')
      try {
        const rendered = renderSetLocal({ work_mem: value }, false)
        expect(rendered).toBe(`SET LOCAL work_mem = '${value}'`)
        expect(value).toMatch(/^[A-Za-z0-9_.-]+$/)
      } catch (err) {
        expect(err).toBeInstanceOf(InvalidArgumentError)
      }
    }
  })
})

describe('literals for one-message statements', () => {
  /** What PostgreSQL's lexer does with a dollar-quoted constant: the text up to the first closing tag. */
  function lex(constant: string): { value: string; rest: string } {
    const tag = /^\$([A-Za-z_][A-Za-z0-9_]*)?\$/.exec(constant)![0]
    const end = constant.indexOf(tag, tag.length)
    return { value: constant.slice(tag.length, end), rest: constant.slice(end + tag.length) }
  }

  it('a dollar-quoted constant always lexes back to exactly its value (seeded property check)', () => {
    let seed = 11
    const next = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed)
    // Quotes, backslashes, dollars and the tag's own letters, so the tag has to move.
    const alphabet = [
      "'",
      '\\',
      '$',
      '$$',
      '$pgs',
      '$pgs0',
      '$pgs0$',
      'p',
      'g',
      's',
      '0',
      '1',
      ';',
      '--',
      '/*',
      ' ',
      'é',
      '€',
      '😀',
      '\n',
      'E',
      'x',
    ]
    for (let i = 0; i < 5000; i++) {
      const value = Array.from({ length: next() % 16 }, () => alphabet[next() % alphabet.length]).join('')
      const constant = dollarQuote(value)
      expect(lex(constant)).toEqual({ value, rest: '' })
    }
  })

  it('an array constant parses back to its elements by the array syntax rules (seeded property check)', () => {
    /** array_in's rule for double-quoted elements: a backslash takes the next character as it is. */
    function parseArray(text: string): string[] {
      const out: string[] = []
      let i = 1
      while (text[i] === '"') {
        let value = ''
        for (i++; text[i] !== '"'; i++) value += text[i] === '\\' ? text[++i] : text[i]
        out.push(value)
        i += 2 // the closing quote, then ',' or '}'
      }
      return out
    }
    let seed = 3
    const next = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed)
    const alphabet = ['"', '\\', '{', '}', ',', ' ', 'NULL', "'", '$pgs0$', 'é', 'x']
    for (let i = 0; i < 3000; i++) {
      const values = Array.from({ length: 1 + (next() % 4) }, () =>
        Array.from({ length: next() % 6 }, () => alphabet[next() % alphabet.length]).join(''),
      )
      expect(parseArray(arrayText(values))).toEqual(values)
    }
    expect(arrayText([0, 1, 2])).toBe('{0,1,2}')
    expect(() => arrayText(['a\u0000'])).toThrow(InvalidArgumentError)
  })

  it('refuses NUL, non-finite numbers and missing values; numbers are quoted numerals', () => {
    expect(() => dollarQuote('a\u0000b')).toThrow(InvalidArgumentError)
    expect(() => inlineParameters('select $1', [Number.NaN])).toThrow(InvalidArgumentError)
    expect(() => inlineParameters('select $1, $2', ['a'])).toThrow(InvalidArgumentError)
    expect(inlineParameters('select $1 limit $2', ["it's", 10])).toBe("select  $pgs0$it's$pgs0$ limit  '10'")
  })

  it('one message: read-only, the Citus line first when Citus is there, the settings, then the statement', () => {
    expect(settingsMessage({ 'hnsw.ef_search': 100 }, false, 'select 1')).toBe(
      "SET LOCAL transaction_read_only = 'on'; SET LOCAL hnsw.ef_search = '100'; select 1",
    )
    expect(settingsMessage({ 'hnsw.ef_search': 100 }, true, 'select 1')).toBe(
      "SET LOCAL citus.propagate_set_commands = 'local'; SET LOCAL transaction_read_only = 'on'; SET LOCAL hnsw.ef_search = '100'; select 1",
    )
    // A frozen settings object's text is kept; an object that can change is rendered every call.
    const frozen = Object.freeze({ 'hnsw.ef_search': 40 })
    expect(settingsMessage(frozen, false, 'select 1')).toBe(settingsMessage(frozen, false, 'select 2').replace('select 2', 'select 1'))
    expect(settingsMessage(frozen, true, 'select 1')).toMatch(/^SET LOCAL citus\.propagate_set_commands/)
    const open: Record<string, number> = { 'hnsw.ef_search': 40 }
    expect(settingsMessage(open, false, 'select 1')).toContain("hnsw.ef_search = '40'")
    open['hnsw.ef_search'] = 41
    expect(settingsMessage(open, false, 'select 1')).toContain("hnsw.ef_search = '41'")
    expect(() => settingsMessage(Object.freeze({ 'bad name': 1 }), false, 'select 1')).toThrow(InvalidArgumentError)
  })
})

describe('vector literals', () => {
  it('every 4-byte float parses back to itself from the literal (seeded property check, incl. extremes)', () => {
    let seed = 5
    const next = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed / 2 ** 31)
    const values = Float32Array.from({ length: 20_000 }, (_, i) => (next() - 0.5) * 10 ** ((i % 60) - 30))
    values.set([0, 1, -1, 3.4028234663852886e38, -3.4028234663852886e38, 1.401298464324817e-45, 1.1754943508222875e-38, 0.1, 1 / 3])
    const parsed = toVectorLiteral(values).slice(1, -1).split(',').map(Number)
    expect(parsed.map((x) => Math.fround(x))).toEqual(Array.from(values))
    // A float64 input is sent as the float4 pgvector would store.
    expect(toVectorLiteral([0.1, 2, -1e-7, 1e7, 123.5, 0])).toBe('[0.100000001,2,-100000001e-15,1e7,123.5,0]')
    // Every finite 4-byte float (200,000 seeded bit patterns, all exponents) reads back as itself.
    const bits = new Uint32Array(200_000).map(() => (seed = (seed * 1103515245 + 12345) % 2 ** 31) * 2 + (seed & 1))
    const floats = new Float32Array(bits.buffer).filter((x) => Number.isFinite(x))
    const back = toVectorLiteral(floats).slice(1, -1).split(',').map(Number)
    expect(back.every((x, i) => Math.fround(x) === floats[i])).toBe(true)
    // The scratch array does not leak one call's digits into the next.
    expect(toVectorLiteral([1, 2, 3])).toBe('[1,2,3]')
    expect(toVectorLiteral([4])).toBe('[4]')
  })
})

describe('plan shapes', () => {
  it('keeps node types, relations, indexes and the columns an index condition constrains; drops values', () => {
    const plan = {
      Plan: {
        'Node Type': 'Limit',
        Plans: [
          {
            'Node Type': 'Index Scan',
            'Index Name': 'chunks_pkey',
            'Relation Name': 'chunks',
            'Index Cond': "((tenant_id = 'acme'::text) AND (document_id = $2))",
            'Total Cost': 9,
          },
        ],
      },
      sql: 'select …',
    }
    expect(planShape(plan)).toBe('Limit > Index Scan [chunks_pkey on chunks: document_id, tenant_id]')
    expect(conditionColumns("(tenant_id = 'it''s'::text)")).toEqual(['tenant_id'])
  })
})

describe('recall and tuning arithmetic', () => {
  it('counts ties as hits, combines only known measures, and adds a sampling margin', () => {
    expect(
      countRecall([{ documentId: 'a', chunkIndex: 0, distance: 0.2 }], [{ documentId: 'b', chunkIndex: 0, distance: 0.2005 }]),
    ).toEqual({ hits: 1, idHits: 0, expected: 1 })
    expect(combinerOf('count(distinct x)')).toBeUndefined()
    expect(requiredOnSample(0.98, 2000)).toBeCloseTo(0.98515, 4)
    expect(requiredOnSample(1, 2000)).toBe(1)
  })
})

describe('re-tuning rules and short queries', () => {
  const tuning = (querySource: 'recent' | 'chunks'): TenantTuning => ({
    tenantId: 'acme',
    efSearch: 100,
    exact: false,
    rowsAtTuning: 1000,
    targetRecall: 0.98,
    recall: 0.99,
    searchP50Ms: 1,
    exactP50Ms: 5,
    indexM: null,
    indexEfConstruction: null,
    tunedAt: new Date(0),
    querySource,
    tuningQueries: 200,
    filter: null,
    alternatives: null,
  })

  it('re-tunes on size, on a sample that filled, and on a sample that changed', () => {
    expect(chunkSampleTarget(0.98)).toBeCloseTo(0.99, 12)
    expect(stillTuned(tuning('chunks'), 1100, 0.98, 0.2, { total: 49, newer: 49 }, 50)).toBe(true)
    expect(stillTuned(tuning('chunks'), 1100, 0.98, 0.2, { total: 50, newer: 50 }, 50)).toBe(false)
    expect(stillTuned(tuning('chunks'), 1300, 0.98, 0.2, { total: 0, newer: 0 }, 50)).toBe(false)
    expect(stillTuned(tuning('recent'), 1000, 0.98, 0.2, { total: 256, newer: 51 }, 50)).toBe(true)
    expect(stillTuned(tuning('recent'), 1000, 0.98, 0.2, { total: 256, newer: 52 }, 50)).toBe(false)
    expect(stillTuned(tuning('recent'), 1000, 0.95, 0.2, { total: 256, newer: 0 }, 50)).toBe(false)
    expect(stillTuned(undefined, 1000, 0.98, 0.2)).toBe(false)
  })

  it('draws NAME lines, titles and sentence windows, the same for the same seed, and splits without overlap', () => {
    const text =
      'NAME\nrsync - a fast, versatile, remote file-copying tool\n\nOptions summary\n===============\n' +
      'Rsync is a fast and extraordinarily versatile file copying tool that can copy locally or to another host. ' +
      'It is famous for its delta-transfer algorithm which reduces the amount of data sent over the network.'
    const drawn = shortQueries(text, 'man/man1/rsync.1.gz', 'seed', 4)
    expect(drawn.slice(0, 2)).toEqual([
      { kind: 'name', text: 'rsync - a fast, versatile, remote file-copying tool' },
      { kind: 'title', text: 'Options summary' },
    ])
    expect(drawn.slice(2).every((q) => q.kind === 'sentence' && q.text.split(' ').length >= 6 && text.includes(q.text))).toBe(true)
    expect(shortQueries(text, 'man/man1/rsync.1.gz', 'seed', 4)).toEqual(drawn)
    const { traffic, evaluation } = splitQueries([...drawn, { kind: 'sentence', text: drawn[0]!.text.toUpperCase() }], 's')
    expect(traffic.length + evaluation.length).toBe(drawn.length)
    const seen = new Set(traffic.map((q) => q.text.toLowerCase()))
    expect(evaluation.some((q) => seen.has(q.text.toLowerCase()))).toBe(false)
  })
})

describe('the filtered budget (issue #35)', () => {
  const tuned = (over: Partial<TenantTuning> = {}): TenantTuning => ({
    tenantId: 'acme',
    efSearch: 200,
    exact: false,
    rowsAtTuning: 30_000,
    targetRecall: 0.98,
    recall: 0.99,
    searchP50Ms: 4,
    exactP50Ms: 20,
    indexM: null,
    indexEfConstruction: null,
    tunedAt: new Date(0),
    querySource: 'chunks',
    tuningQueries: 200,
    filter: null,
    alternatives: null,
    ...over,
  })

  it("derives the walk's candidates and the exact threshold from the tenant's tuning, else the defaults", () => {
    expect(filteredBudget(undefined, 10, false)).toEqual({ exactBelow: 1000, candidates: 40, selectivityScale: 4 })
    // Tuned without a filtered measure: the threshold where exact costs what the walk does; default candidates.
    expect(modelExactBelow(tuned())).toBe(2250)
    expect(filteredBudget(tuned(), 10, false)).toEqual({ exactBelow: 2250, candidates: 40, selectivityScale: 4 })
    expect(filteredBudget(tuned(), 20, false)).toEqual({ exactBelow: 2250, candidates: 80, selectivityScale: 4 })
    // What tuning measured for the filtered path wins; a call's own efSearch keeps the default candidates.
    const measured = tuned({
      filter: {
        candidates: 160,
        exactBelow: 3000,
        source: 'synthetic',
        filters: 8,
        queries: 160,
        recall: 0.99,
        walkP50Ms: 5,
        exactMsPerRow: 0.002,
      },
    })
    expect(filteredBudget(measured, 10, false)).toEqual({ exactBelow: 3000, candidates: 160, selectivityScale: 4 })
    expect(filteredBudget(measured, 20, false)).toEqual({ exactBelow: 3000, candidates: 320, selectivityScale: 4 })
    expect(filteredBudget(measured, 10, true)).toEqual({ exactBelow: 3000, candidates: 40, selectivityScale: 4 })
    // The scale tuning chose (1: the unscaled walk met the target for less); a call's efSearch keeps the default.
    const unscaled = tuned({ filter: { ...measured.filter!, selectivityScale: 1 } })
    expect(filteredBudget(unscaled, 10, false).selectivityScale).toBe(1)
    expect(filteredBudget(unscaled, 10, true).selectivityScale).toBe(4)
    // Sent filters whose walk missed are named for the exact branch; a call's efSearch drops the tenant's budget.
    const named = tuned({ filter: { ...measured.filter!, exactFilters: ['{"ct":{"$lt":500}}'] } })
    expect(filteredBudget(named, 10, false).exactFilters).toEqual(['{"ct":{"$lt":500}}'])
    expect(filteredBudget(named, 10, true).exactFilters).toBeUndefined()
    // A tenant tuned to the exact path has no walk to budget.
    expect(filteredBudget(tuned({ exact: true, efSearch: null }), 10, false)).toEqual({
      exactBelow: 1000,
      candidates: 40,
      selectivityScale: 4,
    })
  })

  it("scales the walk's ef_search by the filter's estimated selectivity, within pgvector's bound", () => {
    expect(walkEfSearch(200, 200, 1)).toBe(200)
    expect(walkEfSearch(200, 200, 0.5)).toBe(400)
    expect(walkEfSearch(40, 40, 0.01)).toBe(160)
    expect(walkEfSearch(400, 400, 0.1)).toBe(1000)
    expect(walkEfSearch(10, 300, 0.5)).toBe(300)
    // At most the tenant's tuned scale: 1 leaves the walk at its ef_search (raised to the candidates).
    expect(walkEfSearch(40, 40, 0.01, 1)).toBe(40)
    expect(walkEfSearch(40, 80, 0.01, 1)).toBe(80)
    expect(walkEfSearch(100, 40, 0.25, 2)).toBe(200)
  })

  it('tops each sent filter up to perFilter searches with the tenant’s queries, within twice the sample', async () => {
    const q = (i: number) => [i, 0]
    const recent = [
      { embedding: q(100), filter: { ct: { $lt: 500 } } },
      { embedding: q(101), filter: { ct: { $lt: 500 } } },
      { embedding: q(102), filter: { owner: 'ana' } },
    ]
    const sources = {
      recentFiltered: async (_tenant: string, n: number) => recent.slice(0, n),
      fields: async () => [],
    } as unknown as FilterCaseSources
    const queries = Array.from({ length: 30 }, (_, i) => q(i))
    const found = (await filterCases(sources, 'acme', 1000, queries, { minRecent: 3, sample: 200, perFilter: 5 }))!
    expect(found.source).toBe('recent')
    const byFilter = (f: object) => found.cases.filter((c) => JSON.stringify(c.filter) === JSON.stringify(f)).map((c) => c.embedding[0])
    // Each filter keeps the searches it was sent with, then the tenant's queries in turn, each filter
    // taking the next ones (a query the index serves badly weighs on one filter, not on all).
    expect(byFilter({ ct: { $lt: 500 } })).toEqual([100, 101, 0, 1, 2])
    expect(byFilter({ owner: 'ana' })).toEqual([102, 3, 4, 5, 6])
    // The searches users sent are marked (a filter sent twice or more may be named for the exact branch).
    expect(found.cases.filter((c) => c.sent).map((c) => c.embedding[0])).toEqual([100, 101, 102])
    // Many distinct filters share 2 × sample searches: each keeps its own, topped up less.
    const small = (await filterCases(sources, 'acme', 1000, queries, { minRecent: 3, sample: 3, perFilter: 5 }))!
    expect(small.cases.length).toBe(6)
    // Too few sent: none of them, and no declared field, so nothing to tune on.
    expect(await filterCases(sources, 'acme', 1000, queries, { minRecent: 4, sample: 200, perFilter: 5 })).toBeUndefined()
  })

  it('fits the exact branch as a fixed cost plus a cost per matching row', () => {
    const at = (matching: number, ms: number) => ({ matching, searches: [{ exactMs: ms }, { exactMs: ms + 0.1 }, { exactMs: ms - 0.1 }] })
    const fit = fitExactCost([at(300, 1.6), at(3000, 7), at(10_000, 21)])!
    expect(fit.perRowMs).toBeCloseTo(0.002, 4)
    expect(fit.fixedMs).toBeCloseTo(1, 1)
    expect(fitExactCost([at(300, 1), at(300, 2)])).toBeUndefined()
  })

  it('stores a filter as JSON that gives the same filter back, Date operands included', () => {
    const filter = { owner: 'ana', at: { $gte: new Date('2024-01-01T00:00:00Z') }, $or: [{ day: { $in: [new Date(0), 'x'] } }] }
    const stored = JSON.parse(JSON.stringify(filterToStored(filter)))
    expect(stored.dates).toEqual([
      ['at', '$gte'],
      ['$or', '0', 'day', '$in', '0'],
    ])
    expect(filterFromStored(stored)).toEqual(filter)
    expect(filterFromStored(JSON.stringify(stored))).toEqual(filter)
    expect(() => filterFromStored({ filter: 1 })).toThrow(InvalidArgumentError)
    expect(() => filterFromStored({ filter: { a: 1 }, dates: [['a']] })).toThrow(InvalidArgumentError)
  })
})

describe('tenant ids of a rollup', () => {
  it('a uuid comes back canonical (lower case): the bucket locks hash its text as the server prints it', () => {
    expect(tenantInput('0F8FAD5B-D9CB-469F-A165-70867728950E', 'uuid')).toBe('0f8fad5b-d9cb-469f-a165-70867728950e')
    expect(() => tenantInput('0F8FAD5B-D9CB-469F-A165', 'uuid')).toThrow(InvalidArgumentError)
  })
})
