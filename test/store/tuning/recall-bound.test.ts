import { describe, expect, it } from 'vitest'
import { InvalidArgumentError, PgScaleError } from '../../../src/index.js'
import {
  MIN_BOUND_QUERIES,
  normalQuantile,
  queriesAround,
  recallBound,
  seededRandom,
  studentT,
  type Anchor,
  type Random,
} from '../../../src/bench-kit.js'

/**
 * The statistics of stated recall, without a database: the one-sided bound on mean per-query
 * recall holds the true mean as often as it claims on seeded skewed distributions like tuned
 * tenants' (most queries 1.0, some 0.9, a few 0.7 or worse), and the query model makes points
 * that are not the chunks, at the scale it calibrated.
 */

/** Per-query recall@10 distributions near the targets tuning aims at, each as a draw. */
const DISTRIBUTIONS: Record<string, (r: Random) => number> = {
  // The issue's measurement: ~20% of queries at 9/10, 2-5 of 200 at 7/10.
  issue: (r) => {
    const u = r.next()
    return u < 0.78 ? 1 : u < 0.98 ? 0.9 : u < 0.995 ? 0.7 : 0.5
  },
  // Queries of three difficulties, each missing results at its own rate (binomial within a query).
  mixture: (r) => {
    const u = r.next()
    const p = u < 0.85 ? 0 : u < 0.95 ? 0.1 : 0.3
    let missed = 0
    for (let i = 0; i < 10; i++) if (r.next() < p) missed++
    return 1 - missed / 10
  },
  // A heavy tail: 1% of queries at 0.3.
  tail: (r) => {
    const u = r.next()
    return u < 0.9 ? 1 : u < 0.96 ? 0.9 : u < 0.99 ? 0.7 : 0.3
  },
}

function trueMean(draw: (r: Random) => number): number {
  const r = seededRandom('truth')
  let sum = 0
  for (let i = 0; i < 100_000; i++) sum += draw(r)
  return sum / 100_000
}

describe('recallBound', () => {
  for (const queries of [100, 200]) {
    it(`a 95% bound over ${queries} queries holds the true mean in ≥ 90% of 200 seeded samples`, () => {
      for (const [name, draw] of Object.entries(DISTRIBUTIONS)) {
        const mean = trueMean(draw)
        let held = 0
        for (let s = 0; s < 200; s++) {
          const r = seededRandom(`${name}:${queries}:${s}`)
          const sample = Array.from({ length: queries }, () => draw(r))
          if (recallBound(sample, { seed: String(s), resamples: 200 }).lower <= mean) held++
        }
        expect(held / 200, `${name} (true mean ${mean.toFixed(4)})`).toBeGreaterThanOrEqual(0.9)
      }
    })
  }

  it('is over queries, not results: a bound on 200 queries is wider than a binomial one on their 2,000 results', () => {
    const r = seededRandom('width')
    const sample = Array.from({ length: 200 }, () => DISTRIBUTIONS.issue!(r))
    const b = recallBound(sample)
    const binomial = b.mean - 1.645 * Math.sqrt((b.mean * (1 - b.mean)) / 2000)
    expect(b.lower).toBeLessThan(binomial)
    expect(b.mean).toBeGreaterThan(b.lower)
    expect([b.queries, b.confidence, b.tooSmall]).toEqual([200, 0.95, false])
  })

  it('a sample with no misses still states less than 1; few queries are flagged too small', () => {
    const perfect = recallBound(new Array(200).fill(1))
    expect(perfect.mean).toBe(1)
    expect(perfect.lower).toBeLessThan(1)
    expect(perfect.lower).toBeGreaterThan(0.99)
    const few = recallBound(new Array(MIN_BOUND_QUERIES - 1).fill(1))
    expect(few.tooSmall).toBe(true)
    expect(few.lower).toBeLessThan(perfect.lower)
    expect(recallBound([])).toMatchObject({ queries: 0, lower: 0, tooSmall: true })
  })

  it('is seeded: the same sample and seed give the same bound', () => {
    const r = seededRandom('seeded')
    const sample = Array.from({ length: 100 }, () => DISTRIBUTIONS.mixture!(r))
    expect(recallBound(sample, { seed: 'a' })).toEqual(recallBound(sample, { seed: 'a' }))
  })

  it('quantiles match the tables', () => {
    expect(normalQuantile(0.95)).toBeCloseTo(1.6449, 4)
    expect(normalQuantile(0.05)).toBeCloseTo(-1.6449, 4)
    expect(studentT(0.95, 49)).toBeCloseTo(1.6766, 2)
    expect(studentT(0.95, 199)).toBeCloseTo(1.6525, 3)
  })

  it('bad options and values are typed errors', () => {
    for (const bad of [
      () => recallBound([1], { confidence: 1.2 }),
      () => recallBound([1], { confidence: Number.NaN }),
      () => recallBound([1], { resamples: 5 }),
      () => recallBound([1], { unseen: 2 }),
      () => recallBound([1.5]),
      () => recallBound([Number.NaN]),
    ]) {
      expect(bad).toThrow(InvalidArgumentError)
      expect(bad).toThrow(PgScaleError)
    }
  })
})

describe('the query model (queriesAround)', () => {
  /** Anchors on the unit sphere in 24 dimensions, each with 10 neighbours at distances 0.1-0.3. */
  function anchors(count: number): Anchor[] {
    const r = seededRandom('anchors')
    const unit = (x: number[]) => x.map((v) => v / Math.hypot(...x))
    return Array.from({ length: count }, () => {
      const a = unit(Array.from({ length: 24 }, () => r.gaussian()))
      const neighbours = Array.from({ length: 10 }, (_, j) => {
        const step = 0.1 + (0.2 * j) / 9
        const d = unit(Array.from({ length: 24 }, () => r.gaussian()))
        return unit(a.map((v, i) => v + step * d[i]!))
      })
      return { embedding: a, neighbours }
    })
  }
  const distance = (a: readonly number[], b: readonly number[]) => Math.hypot(...a.map((v, i) => v - b[i]!))

  it('makes points that are none of the stored vectors, at multiples of the calibrated scale', () => {
    const stored = anchors(25)
    const made = queriesAround(stored, { n: 100, seed: 's', cosine: true })
    expect(made.queries).toHaveLength(100)
    expect(new Set(made.families)).toEqual(new Set(['between', 'local', 'far', 'blend', 'isotropic']))
    const all = stored.flatMap((a) => [a.embedding, ...a.neighbours])
    // The calibrated scale: the median distance to the 10th neighbour (≈ 0.3 here).
    expect(made.kthDistance).toBeGreaterThan(0.25)
    expect(made.kthDistance).toBeLessThan(0.35)
    expect(made.k).toBe(10)
    for (const [i, q] of made.queries.entries()) {
      expect(Math.hypot(...q)).toBeCloseTo(1, 9)
      const nearest = Math.min(...all.map((v) => distance(q, v)))
      expect(nearest, `query ${i} (${made.families[i]}) is a stored vector`).toBeGreaterThan(1e-3)
      // Each query is within a few scales of its anchor: the model stays near the tenant's data.
      const own = stored[Math.floor(i / 5) % stored.length]!
      const anchor = own.embedding
      const d = distance(q, anchor)
      const scale = distance(anchor, own.neighbours[9]!)
      if (made.families[i] === 'local') expect(d / scale).toBeGreaterThan(0.6)
      if (made.families[i] === 'far') expect(d / scale).toBeGreaterThan(1.5)
      if (made.families[i] === 'isotropic') expect(d / scale).toBeGreaterThan(1.2)
      if (made.families[i] === 'blend') {
        // Halfway to another anchor, one farther than the anchor's 10th neighbour: as far from both.
        const partner = stored.find((a) => a !== own && Math.abs(distance(q, a.embedding) - d) < 1e-9)
        expect(partner, `query ${i} is halfway to another anchor`).toBeDefined()
        expect(distance(anchor, partner!.embedding)).toBeGreaterThan(scale)
      } else expect(d / scale).toBeLessThan(3.2)
    }
  })

  it('a lone anchor has no partner to blend with: its blend queries are isotropic moves, labelled so', () => {
    const made = queriesAround(anchors(1), { n: 10, seed: 's', cosine: true })
    expect(made.families).toEqual([
      'between',
      'local',
      'far',
      'isotropic',
      'isotropic',
      'between',
      'local',
      'far',
      'isotropic',
      'isotropic',
    ])
    const [anchor] = anchors(1)
    const scale = distance(anchor!.embedding, anchor!.neighbours[9]!)
    expect(distance(made.queries[3]!, anchor!.embedding) / scale).toBeGreaterThan(1.2)
  })

  it('is seeded and scales with the data: twice the spread, twice the scale', () => {
    const stored = anchors(10)
    expect(queriesAround(stored, { n: 40, seed: 'x', cosine: false })).toEqual(queriesAround(stored, { n: 40, seed: 'x', cosine: false }))
    const doubled = stored.map((a) => ({
      embedding: a.embedding.map((v) => 2 * v),
      neighbours: a.neighbours.map((n) => n.map((v) => 2 * v)),
    }))
    const one = queriesAround(stored, { n: 40, seed: 'x', cosine: false })
    const two = queriesAround(doubled, { n: 40, seed: 'x', cosine: false })
    expect(two.kthDistance).toBeCloseTo(2 * one.kthDistance, 9)
    for (const [i, q] of two.queries.entries()) for (const [j, v] of q.entries()) expect(v).toBeCloseTo(2 * one.queries[i]![j]!, 9)
  })
})
