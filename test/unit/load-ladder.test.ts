import { describe, expect, it } from 'vitest'
import { DatabaseError } from '../../src/index.js'
import { ACL_GROUPS, aclGroup, CorpusTruth, truthClock } from '../../bench/rag/load/corpus-truth.js'
import { LOAD_SHAPE_NAMES, LOAD_SHAPES, spikeOutcome, type ShapeSettings } from '../../bench/rag/load/load-shapes.js'
import { clientsPerWorker } from '../../bench/rag/load/load-workers.js'
import { mergeTallies, type Tally } from '../../bench/rag/load/load-step.js'
import { classifyFailure, findBreak, findSaturation, ladderVerdict, parseMix, pickOperation } from '../../bench/rag/load/ladder-analysis.js'
import { rssGrowthPerHour } from '../../bench/rag/load/soak.js'
import { seededRandom } from '../../src/bench-kit.js'

const step = (clients: number, throughput: number, readP95Ms = 5, errorRate = 0) => ({ clients, throughput, readP95Ms, errorRate })

describe('the ladder: where it breaks', () => {
  it('is the first step whose read p95 passes the bound', () => {
    const broke = findBreak([step(1, 100, 3), step(2, 180, 20), step(4, 200, 51), step(8, 210, 90)], 50)
    expect(broke?.clients).toBe(4)
    expect(broke?.why).toMatch(/read p95 51.0 ms > 50 ms/)
  })

  it('or whose error rate passes 1%, even with a fast p95', () => {
    const broke = findBreak([step(1, 100), step(2, 190, 4, 0.01), step(4, 300, 4, 0.011)], 50)
    expect(broke?.clients).toBe(4)
    expect(broke?.why).toMatch(/error rate 1.10% > 1%/)
  })

  it('is nothing when every step held', () => {
    expect(findBreak([step(1, 100), step(2, 190)], 50)).toBeUndefined()
    expect(findBreak([], 50)).toBeUndefined()
  })
})

describe('the ladder: the verdict a report always states', () => {
  it('held: no break, and the largest step that held', () => {
    expect(ladderVerdict([step(1, 100), step(2, 190), step(4, 200)], 50)).toEqual({ verdict: 'held', breaks: null, heldUpTo: 4 })
  })

  it('broke: the break, and the last step before it', () => {
    expect(ladderVerdict([step(1, 100), step(2, 190), step(4, 200, 60)], 50)).toEqual({
      verdict: 'broke',
      breaks: { clients: 4, why: 'read p95 60.0 ms > 50 ms' },
      heldUpTo: 2,
    })
    expect(ladderVerdict([step(1, 100, 70)], 50)).toMatchObject({ verdict: 'broke', heldUpTo: null })
  })

  it('not-run: no step (the smoke check failed)', () => {
    expect(ladderVerdict([], 50)).toEqual({ verdict: 'not-run', breaks: null, heldUpTo: null })
  })
})

describe('the ladder: where it saturates', () => {
  it('is the step after which more clients bought less than 10% more throughput', () => {
    expect(findSaturation([step(1, 100), step(2, 190), step(4, 300), step(8, 320), step(16, 400)])?.clients).toBe(4)
  })

  it('a drop counts as saturation too', () => {
    expect(findSaturation([step(1, 100), step(2, 90)])?.clients).toBe(1)
  })

  it('exactly +10% still grows; not reached when the last step still grew', () => {
    expect(findSaturation([step(1, 100), step(2, 110), step(4, 121)])).toBeUndefined()
    expect(findSaturation([step(1, 100)])).toBeUndefined()
  })
})

describe('rejections are counted apart from errors', () => {
  const serverError = (code: string) => new DatabaseError({ message: `server said ${code}`, code })

  it.each([
    ['pool acquisition timeout (node-postgres)', new Error('timeout exceeded when trying to connect')],
    ['too many connections (53300)', serverError('53300')],
    ['lock timeout (55P03)', serverError('55P03')],
    ['server starting up or shutting down (57P03)', serverError('57P03')],
    ['a rejection wrapped as the cause of another error', new Error('replace failed', { cause: serverError('55P03') })],
    ['a driver error object with its SQLSTATE as code', Object.assign(new Error('sorry, too many clients already'), { code: '53300' })],
  ])('%s is a rejection', (_, err) => {
    expect(classifyFailure(err)).toBe('rejection')
  })

  it.each([
    ['a syntax error (42601)', serverError('42601')],
    ['a statement timeout (57014)', serverError('57014')],
    ['a deadlock (40P01)', serverError('40P01')],
    ['a plain exception', new Error('boom')],
    ['a thrown string', 'boom'],
  ])('%s is an error', (_, err) => {
    expect(classifyFailure(err)).toBe('error')
  })
})

describe('the operation mix', () => {
  it('parses weights, and refuses unknown operations, malformed parts and an all-zero mix', () => {
    expect(parseMix('search=70,filtered=10,hybrid=10,replace=8,delete=2')).toEqual({
      search: 70,
      filtered: 10,
      hybrid: 10,
      replace: 8,
      delete: 2,
    })
    expect(parseMix('search=1')).toEqual({ search: 1, filtered: 0, hybrid: 0, replace: 0, delete: 0 })
    expect(() => parseMix('search=80,update=20')).toThrow(/update=20/)
    expect(() => parseMix('search')).toThrow(/OP=WEIGHT/)
    expect(() => parseMix('search=-1')).toThrow(/OP=WEIGHT/)
    expect(() => parseMix('search=0,delete=0')).toThrow(/every weight is 0/)
  })

  it('draws operations in proportion to their weights', () => {
    const random = seededRandom('mix')
    const mix = parseMix('search=70,filtered=10,hybrid=10,replace=8,delete=2')
    const counts = { search: 0, filtered: 0, hybrid: 0, replace: 0, delete: 0 }
    for (let i = 0; i < 20_000; i++) counts[pickOperation(mix, () => random.next())]++
    expect(counts.search / 20_000).toBeCloseTo(0.7, 1)
    expect(counts.filtered / 20_000).toBeCloseTo(0.1, 1)
    expect(counts.hybrid / 20_000).toBeCloseTo(0.1, 1)
    expect(counts.replace / 20_000).toBeCloseTo(0.08, 1)
    expect(counts.delete).toBeGreaterThan(250)
    expect(counts.delete).toBeLessThan(550)
  })
})

describe('the truth every answer is checked against', () => {
  const truth = () => {
    const t = new CorpusTruth()
    t.seed('acme', 'doc-1')
    t.seed('acme', 'doc-2')
    t.seed('globex', 'doc-1')
    return t
  }
  const row = (documentId: string, owner: string) => ({ documentId, metadata: { owner } })

  it('accepts rows of the caller’s documents', () => {
    expect(truth().check('acme', [row('doc-1', 'acme'), row('doc-2', 'acme')], truthClock())).toEqual([])
  })

  it('catches a row of another tenant, even with a document id the caller also has', () => {
    const wrong = truth().check('acme', [row('doc-1', 'globex')], truthClock())
    expect(wrong).toEqual([{ caller: 'acme', documentId: 'doc-1', owner: 'globex', why: 'other tenant' }])
  })

  it('catches a document the caller never had, and a row with no owner', () => {
    const t = truth()
    expect(t.check('globex', [row('doc-2', 'globex')], 0)[0]?.why).toBe('unknown document')
    expect(t.check('acme', [{ documentId: 'doc-1', metadata: {} }], 0)[0]?.why).toBe('other tenant')
  })

  it('a document deleted before the search started is wrong; during the search, or while being written, it is not', () => {
    const t = truth()
    t.begin('acme', 'doc-1')
    expect(t.check('acme', [row('doc-1', 'acme')], truthClock())).toEqual([]) // delete in flight
    t.end('acme', 'doc-1', 'delete', true)
    const afterDelete = truthClock() + 1
    expect(t.check('acme', [row('doc-1', 'acme')], afterDelete)[0]?.why).toBe('deleted document')
    expect(t.check('acme', [row('doc-1', 'acme')], 0)).toEqual([]) // the search started before the delete ended
    t.begin('acme', 'doc-1')
    t.end('acme', 'doc-1', 'replace', true)
    expect(t.check('acme', [row('doc-1', 'acme')], truthClock() + 1)).toEqual([])
  })

  it('under an ACL filter, a row of a group the caller was not given is wrong', () => {
    const groups = new Set(['g1', 'g4'])
    const acl = (documentId: string, group: string) => ({ documentId, metadata: { owner: 'acme', acl: group } })
    expect(truth().check('acme', [acl('doc-1', 'g1'), acl('doc-2', 'g4')], 0, groups)).toEqual([])
    expect(truth().check('acme', [acl('doc-1', 'g2')], 0, groups)[0]?.why).toBe('outside the ACL filter')
    expect(truth().check('acme', [row('doc-1', 'acme')], 0, groups)[0]?.why).toBe('outside the ACL filter')
    expect(aclGroup('acme/doc-1')).toBe(aclGroup('acme/doc-1'))
    const spread = new Set(Array.from({ length: 200 }, (_, i) => aclGroup(`t/doc-${i}`)))
    expect(spread.size).toBe(ACL_GROUPS)
  })

  it('a failed write changes nothing, and writing a document never seeded is a bench bug', () => {
    const t = truth()
    t.begin('acme', 'doc-2')
    t.end('acme', 'doc-2', 'delete', false)
    expect(t.check('acme', [row('doc-2', 'acme')], truthClock() + 1)).toEqual([])
    expect(() => t.begin('acme', 'doc-9')).toThrow(/never seeded/)
    expect(t.documentIds('acme')).toEqual(['doc-1', 'doc-2'])
    expect(t.tenants()).toEqual(['acme', 'globex'])
  })
})

describe('the soak’s growth rate', () => {
  it('is the slope over the second half, per hour', () => {
    const samples = Array.from({ length: 13 }, (_, i) => ({ second: i * 300, rssMB: i < 6 ? 100 + i * 20 : 200 + (i - 6) * 2.5 }))
    // Second half: +2.5 MB every 5 min = 30 MB/h (the first half's fast growth is warm-up).
    expect(rssGrowthPerHour(samples)).toBeCloseTo(30, 6)
    expect(rssGrowthPerHour([{ second: 0, rssMB: 100 }])).toBe(0)
  })
})

describe('the truth across threads', () => {
  it("an attached truth (a worker thread's) sees the writes of the one it came from, and the other way round", () => {
    const main = new CorpusTruth()
    main.seed('acme', 'doc-1')
    main.seed('acme', 'doc-2')
    const worker = CorpusTruth.attach(structuredClone(main.share()))
    const row = (documentId: string) => [{ documentId, metadata: { owner: 'acme' } }]
    worker.begin('acme', 'doc-1')
    worker.end('acme', 'doc-1', 'delete', true)
    expect(main.check('acme', row('doc-1'), truthClock() + 1)[0]?.why).toBe('deleted document')
    main.begin('acme', 'doc-2')
    expect(worker.check('acme', row('doc-2'), truthClock() + 1)).toEqual([]) // in flight in the other thread
    main.end('acme', 'doc-2', 'delete', true)
    expect(worker.check('acme', row('doc-2'), truthClock() + 1)[0]?.why).toBe('deleted document')
    expect(worker.documentIds('acme')).toEqual(['doc-1', 'doc-2'])
    expect(() => main.seed('acme', 'doc-3')).toThrow(/sealed/)
  })

  it("merges the threads' tallies, however many latencies a long step or a soak holds", () => {
    const tally = (n: number, wrong: number): Tally => ({
      ms: { search: new Array<number>(n).fill(1), filtered: [], hybrid: [2], replace: [], delete: [] },
      errors: { search: 1, filtered: 0, hybrid: 0, replace: 0, delete: 0 },
      rejections: { search: 0, filtered: 0, hybrid: 0, replace: 2, delete: 0 },
      rowsChecked: 10,
      wrongCount: wrong,
      wrong: Array.from({ length: wrong }, () => ({ caller: 'a', documentId: 'd', owner: 'b', why: 'other tenant' as const })),
      failures: { errors: ['e1', 'e2', 'e3'], rejections: [] },
    })
    const all = mergeTallies([tally(400_000, 7), tally(300_000, 7)])
    expect(all.ms.search).toHaveLength(700_000)
    expect(all.ms.hybrid).toEqual([2, 2])
    expect([all.errors.search, all.rejections.replace, all.rowsChecked, all.wrongCount]).toEqual([2, 4, 20, 14])
    expect([all.wrong.length, all.failures.errors.length]).toEqual([10, 5])
  })

  it("spreads a step's clients over the threads as evenly as it can", () => {
    expect(clientsPerWorker(1, 4)).toEqual([1])
    expect(clientsPerWorker(2, 4)).toEqual([1, 1])
    expect(clientsPerWorker(8, 4)).toEqual([2, 2, 2, 2])
    expect(clientsPerWorker(10, 4)).toEqual([3, 3, 2, 2])
    expect(clientsPerWorker(3, 1)).toEqual([3])
  })
})

describe('load shapes', () => {
  const settings: ShapeSettings = {
    clients: [2, 4, 8],
    seconds: 10,
    warmupSeconds: 2,
    spikeFactor: 4,
    spikeSeconds: 5,
    breakpointMaxClients: 64,
    maxP95Ms: 50,
    soakClients: 8,
    soakMinutes: 3,
  }
  const outcome = (clients: number, readP95Ms: number, errorRate = 0) => ({ clients, throughput: 100, readP95Ms, errorRate })
  const phasesOf = (name: (typeof LOAD_SHAPE_NAMES)[number]) =>
    [...LOAD_SHAPES[name].phases(settings)].map((p) => `${p.phase}:${p.clients}:${p.seconds}:${p.warmupSeconds}`)

  it('smoke, load, spike and soak from their one definition', () => {
    expect(phasesOf('smoke')).toEqual(['smoke:1:10:2'])
    expect(phasesOf('load')).toEqual(['step:2:10:2', 'step:4:10:2', 'step:8:10:2'])
    expect(phasesOf('spike')).toEqual(['base:2:10:2', 'burst:8:5:0', 'recovery:2:10:0'])
    expect(phasesOf('soak')).toEqual(['soak:8:180:2'])
    expect(LOAD_SHAPE_NAMES.map((n) => LOAD_SHAPES[n].maxClients(settings))).toEqual([1, 8, 8, 8, 64])
  })

  it('breakpoint doubles until a step breaks, or past its cap', () => {
    const ramp = LOAD_SHAPES.breakpoint.phases(settings)
    const seen: number[] = []
    let next = ramp.next()
    const p95 = (clients: number) => (clients >= 16 ? 80 : 5)
    while (!next.done) {
      seen.push(next.value.clients)
      next = ramp.next(outcome(next.value.clients, p95(next.value.clients)))
    }
    expect(seen).toEqual([2, 4, 8, 16])
    const errors = LOAD_SHAPES.breakpoint.phases(settings)
    expect(errors.next().value).toMatchObject({ clients: 2 })
    expect(errors.next(outcome(2, 1, 0.5)).done).toBe(true)
    const capped = [...LOAD_SHAPES.breakpoint.phases({ ...settings, breakpointMaxClients: 10 })]
    expect(capped.map((p) => p.clients)).toEqual([2, 4, 8]) // never broke: stops before passing the cap
  })

  it('a spike recovered when its recovery reads within 1.5× (+1 ms) of the base and errors ≤ 1%', () => {
    const step = (phase: string, readP95Ms: number, errorRate = 0, errors = 0) => ({
      ...outcome(2, readP95Ms, errorRate),
      phase,
      rejections: 3,
      operations: { search: { errors } },
    })
    expect(spikeOutcome([step('base', 4), step('burst', 40, 0.02, 7), step('recovery', 6.5)])).toEqual({
      baseReadP95Ms: 4,
      burstReadP95Ms: 40,
      recoveryReadP95Ms: 6.5,
      burstErrors: 7,
      burstRejections: 3,
      recovered: true,
    })
    expect(spikeOutcome([step('base', 4), step('burst', 40), step('recovery', 7.5)])?.recovered).toBe(false)
    expect(spikeOutcome([step('base', 4), step('burst', 40), step('recovery', 5, 0.05)])?.recovered).toBe(false)
    expect(spikeOutcome([step('base', 4)])).toBeNull()
  })
})
