import { describe, expect, it } from 'vitest'
import { InvalidArgumentError } from '../../../src/index.js'
import { freshRecallBound, recallBound, seededRandom, type Random } from '../../../src/bench-kit.js'

/**
 * The statement `optimize()` makes: a prediction bound on what fresh queries get, without a
 * database. On seeded per-query recall distributions like tuned tenants' — above all the one the
 * generators showed (almost every query perfect, a rare one missing most of its neighbours) — the
 * mean of 200 fresh queries is at least the bound stated from 200 measured ones as often as it
 * claims, also when fresh queries are harder than the measured ones in the way the query model was
 * measured to be (3× as many imperfect queries); a bound on the true mean alone is not.
 */

/** Per-query recall@10: `rate` of the queries imperfect, each of those drawn by `miss`. */
function stuck(rate: number, miss: (r: Random) => number): (r: Random) => number {
  return (r) => (r.next() < rate ? miss(r) : 1)
}

/** A miss as the generators' imperfect queries were: 0.9 half the time, else 0.0-0.8. */
const generatorMiss = (r: Random) => (r.next() < 0.5 ? 0.9 : Math.floor(r.next() * 9) / 10)

/** Measured and fresh distributions: [measured, fresh]. */
const CASES: Record<string, [(r: Random) => number, (r: Random) => number]> = {
  // As the generators measured: 0.5-1% of queries imperfect, the same for fresh queries.
  same: [stuck(0.01, generatorMiss), stuck(0.01, generatorMiss)],
  // The query model against fresh queries where they differed most (rank-64 topics): 3x the rate.
  harder: [stuck(0.01, generatorMiss), stuck(0.03, generatorMiss)],
  // The issue's measurement: ~20% of queries at 9/10, 2-5 of 200 at 7/10.
  issue: [
    (r) => {
      const u = r.next()
      return u < 0.78 ? 1 : u < 0.98 ? 0.9 : u < 0.995 ? 0.7 : 0.5
    },
    (r) => {
      const u = r.next()
      return u < 0.78 ? 1 : u < 0.98 ? 0.9 : u < 0.995 ? 0.7 : 0.5
    },
  ],
}

/** Seeded draws per case. */
const DRAWS = 100

function coverage(
  measured: (r: Random) => number,
  fresh: (r: Random) => number,
  name: string,
  bound: (s: number[], seed: string) => number,
) {
  let held = 0
  for (let s = 0; s < DRAWS; s++) {
    const r = seededRandom(`${name}:${s}`)
    const sample = Array.from({ length: 200 }, () => measured(r))
    const next = Array.from({ length: 200 }, () => fresh(r))
    if (next.reduce((a, v) => a + v, 0) / 200 >= bound(sample, String(s))) held++
  }
  return held / DRAWS
}

describe('freshRecallBound', () => {
  it('the mean of 200 fresh queries is at least the bound stated from 200 measured ones in ≥ 90% of 100 seeded draws', () => {
    for (const [name, [measured, fresh]] of Object.entries(CASES)) {
      const held = coverage(measured, fresh, name, (s, seed) => freshRecallBound(s, { seed, resamples: 100 }).lower)
      expect(held, name).toBeGreaterThanOrEqual(0.9)
    }
  })

  it('a bound on the true mean does not hold fresh samples as often: the statement needs the prediction bound', () => {
    const [measured, fresh] = CASES.harder!
    const onMean = coverage(measured, fresh, 'harder', (s, seed) => recallBound(s, { seed, resamples: 100 }).lower)
    const predicted = coverage(measured, fresh, 'harder', (s, seed) => freshRecallBound(s, { seed, resamples: 100 }).lower)
    expect(onMean).toBeLessThan(0.9)
    expect(predicted).toBeGreaterThan(onMean)
  })

  it('is wider than the bound on the mean, wider still for fewer fresh queries; 200 perfect queries state 0.98', () => {
    const perfect = new Array<number>(200).fill(1)
    expect(freshRecallBound(perfect).lower).toBeCloseTo(0.98, 2)
    expect(freshRecallBound(perfect).lower).toBeLessThan(recallBound(perfect).lower)
    expect(freshRecallBound(perfect, { fresh: 50 }).lower).toBeLessThan(freshRecallBound(perfect, { fresh: 1000 }).lower)
    expect(freshRecallBound(perfect, { seed: 'a' })).toEqual(freshRecallBound(perfect, { seed: 'a' }))
    expect(freshRecallBound([])).toMatchObject({ queries: 0, lower: 0, tooSmall: true })
  })

  it('bad options and values are typed errors', () => {
    for (const fresh of [0, 1.5, 200_000]) expect(() => freshRecallBound([1, 1, 1], { fresh })).toThrow(InvalidArgumentError)
    expect(() => freshRecallBound([1, 2])).toThrow(InvalidArgumentError)
    expect(() => freshRecallBound([1, 1], { unseen: -1 })).toThrow(InvalidArgumentError)
  })
})
