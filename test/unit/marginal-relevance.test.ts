import { describe, expect, it } from 'vitest'
import { maximalMarginalRelevance } from '../../src/index.js'
import { DimensionMismatchError, InvalidArgumentError } from '../../src/index.js'

/** A unit vector `degrees` from the x axis. */
const at = (degrees: number) => [Math.cos((degrees * Math.PI) / 180), Math.sin((degrees * Math.PI) / 180)]

/**
 * The hand-computed case. Query at 0°; candidates a at 10°, b at 12° (a near-duplicate of a),
 * c at -40°. Cosine similarities: to the query a 0.9848, b 0.9781, c 0.7660; a–b 0.9994 (2°),
 * a–c 0.6428 (50°), b–c 0.6157 (52°).
 *
 * lambda 0.5: the first pick is a (0.5 · 0.9848 = 0.4924, the largest). Then
 *   b: 0.5 · 0.9781 − 0.5 · 0.9994 = −0.0106
 *   c: 0.5 · 0.7660 − 0.5 · 0.6428 = +0.0616  → c
 * and b last → [a, c, b].
 * lambda 0.9: after a, b: 0.9 · 0.9781 − 0.1 · 0.9994 = 0.7804; c: 0.9 · 0.7660 − 0.1 · 0.6428 = 0.6251 → [a, b, c].
 * lambda 0: every first score is 0; the tie goes to the most relevant, a; then b −0.9994, c −0.6428 → [a, c, b].
 */
describe('maximalMarginalRelevance', () => {
  const query = at(0)
  const candidates = [at(10), at(12), at(-40)]

  it('picks by lambda · relevance − (1 − lambda) · redundancy, as computed by hand', () => {
    expect(maximalMarginalRelevance(query, candidates, 3, 0.5)).toEqual([0, 2, 1])
    expect(maximalMarginalRelevance(query, candidates, 3, 0.9)).toEqual([0, 1, 2])
    expect(maximalMarginalRelevance(query, candidates, 3, 0)).toEqual([0, 2, 1])
    expect(maximalMarginalRelevance(query, candidates, 3, 1)).toEqual([0, 1, 2])
  })

  it('the crossover between b and c is where the hand formula says', () => {
    // b beats c after a when λ·0.9781 − (1−λ)·0.9994 > λ·0.7660 − (1−λ)·0.6428, i.e. λ > 0.3566/(0.3566 + 0.2121) = 0.6270.
    const rel = (d: number) => Math.cos((d * Math.PI) / 180)
    const crossover = (rel(2) - rel(50)) / (rel(2) - rel(50) + (rel(12) - rel(40)))
    expect(crossover).toBeCloseTo(0.627, 3)
    expect(maximalMarginalRelevance(query, candidates, 2, crossover - 0.01)).toEqual([0, 2])
    expect(maximalMarginalRelevance(query, candidates, 2, crossover + 0.01)).toEqual([0, 1])
  })

  it('k beyond the candidates returns them all; k = 0 none; order of the input does not matter', () => {
    expect(maximalMarginalRelevance(query, candidates, 10)).toEqual([0, 2, 1])
    expect(maximalMarginalRelevance(query, candidates, 0)).toEqual([])
    expect(maximalMarginalRelevance(query, [], 3)).toEqual([])
    expect(maximalMarginalRelevance(query, [at(-40), at(12), at(10)], 3, 0.5)).toEqual([2, 0, 1])
  })

  it('scale does not matter (cosine), a zero vector has similarity 0, Float32Array works', () => {
    expect(maximalMarginalRelevance([5, 0], [at(10).map((x) => 3 * x), at(12), at(-40)], 3, 0.5)).toEqual([0, 2, 1])
    expect(maximalMarginalRelevance(query, [[0, 0], at(80)], 2, 0.5)).toEqual([1, 0])
    expect(
      maximalMarginalRelevance(
        new Float32Array(query),
        candidates.map((c) => new Float32Array(c)),
        3,
        0.5,
      ),
    ).toEqual([0, 2, 1])
  })

  it('refuses a lambda outside 0..1, a bad k and vectors of other lengths', () => {
    expect(() => maximalMarginalRelevance(query, candidates, 2, 1.1)).toThrow(InvalidArgumentError)
    expect(() => maximalMarginalRelevance(query, candidates, 2, Number.NaN)).toThrow(InvalidArgumentError)
    expect(() => maximalMarginalRelevance(query, candidates, -1)).toThrow(InvalidArgumentError)
    expect(() => maximalMarginalRelevance(query, candidates, 1.5)).toThrow(InvalidArgumentError)
    expect(() => maximalMarginalRelevance(query, [[1, 0, 0]], 1)).toThrow(DimensionMismatchError)
  })
})

/**
 * The max over the picks is the picks' own similarity, negative when a candidate points away from
 * every pick (no floor at 0). q = [1,0,0,0]; a = [0.9, 0.43589, 0, 0] (relevance 0.9);
 * b = unit([0.5, −0.9, 0.5, 0.7]) (relevance 0.3606, a–b −0.0074); c = unit([0.3, −0.95, 0, 0.1])
 * (relevance 0.3003, a–c −0.1583). After a, lambda 0.5:
 *   b: 0.5 · 0.3606 − 0.5 · (−0.0074) = 0.1840
 *   c: 0.5 · 0.3003 − 0.5 · (−0.1583) = 0.2293  → c
 * With a floor at 0, c's −0.1583 would count as 0 and b (0.1803 against 0.1502) would win.
 */
describe('maximalMarginalRelevance: a negative similarity to the picks counts as it is', () => {
  const unit = (v: number[]) => v.map((x) => x / Math.hypot(...v))
  const q = [1, 0, 0, 0]
  const candidates = [[0.9, 0.43589, 0, 0], unit([0.5, -0.9, 0.5, 0.7]), unit([0.3, -0.95, 0, 0.1])]

  it('picks c, the candidate pointing further away from a', () => {
    expect(maximalMarginalRelevance(q, candidates, 2, 0.5)).toEqual([0, 2])
  })

  it('lambda 1 is pure relevance (no 0 · −∞ = NaN), lambda 0 diversity after the first pick', () => {
    expect(maximalMarginalRelevance(q, candidates, 3, 1)).toEqual([0, 1, 2])
    expect(maximalMarginalRelevance(q, candidates, 3, 0)).toEqual([0, 2, 1])
    expect(
      maximalMarginalRelevance(
        q,
        [
          [-1, 0, 0, 0],
          [0, 1, 0, 0],
        ],
        2,
        1,
      ),
    ).toEqual([1, 0])
  })
})
