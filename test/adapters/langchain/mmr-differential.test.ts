import { beforeAll, expect, it } from 'vitest'
import { maximalMarginalRelevance } from '../../../src/index.js'
import { seededRandom, type Random } from '../../../src/bench-kit.js'
import { describeUnless } from '../../support/skip.js'
import { LANGCHAIN_MISSING } from './langchain-kit.js'
import { cosineSimilarity } from '../../support/vectors.js'

/**
 * pgscale's MMR beside LangChain core's `maximalMarginalRelevance` (`@langchain/core/utils/math`)
 * on the same seeded candidates: the same picks in the same order, in every case. The only
 * difference allowed is a tie (two candidates whose scores are equal to 1e-12 at the step where the
 * lists part): LangChain takes the earlier, pgscale the more relevant, then the earlier. Cases:
 * 2..24 dimensions, 0..40 Gaussian candidates (so many point away from the picks: the negative
 * similarities a floor at 0 would hide), k 0..candidates + 2, lambda 0, 1 and uniform in 0..1.
 */
type LangChainMmr = (query: number[], embeddings: number[][], lambda?: number, k?: number) => number[]

const CASES = 2000

interface Case {
  query: number[]
  candidates: number[][]
  k: number
  lambda: number
}

function randomCase(random: Random, i: number): Case {
  const dimensions = 2 + random.int(23)
  const vector = () => Array.from({ length: dimensions }, () => random.gaussian())
  const count = random.int(41)
  const lambda = i % 10 === 0 ? 0 : i % 10 === 1 ? 1 : random.next()
  return { query: vector(), candidates: Array.from({ length: count }, vector), k: random.int(count + 3), lambda }
}

/** Whether the lists part at a tie: the two candidates chosen there score the same (to 1e-12). */
function partsAtTie(c: Case, ours: number[], theirs: number[]): boolean {
  const at = ours.findIndex((x, i) => x !== theirs[i])
  if (at === -1 || ours[at] === undefined || theirs[at] === undefined) return false
  const picked = ours.slice(0, at)
  const score = (i: number) =>
    at === 0
      ? cosineSimilarity(c.query, c.candidates[i]!)
      : c.lambda * cosineSimilarity(c.query, c.candidates[i]!) -
        (1 - c.lambda) * Math.max(...picked.map((p) => cosineSimilarity(c.candidates[i]!, c.candidates[p]!)))
  return Math.abs(score(ours[at]) - score(theirs[at])) < 1e-12
}

describeUnless(LANGCHAIN_MISSING)('MMR: pgscale and LangChain core pick the same', () => {
  let langchain: LangChainMmr
  beforeAll(async () => {
    langchain = (await import('@langchain/core/utils/math')).maximalMarginalRelevance as LangChainMmr
  })

  it(`${CASES} seeded cases: the same picks in the same order, ties aside`, () => {
    const random = seededRandom('mmr-differential:langchain')
    let differences = 0
    let ties = 0
    const firstDifferences: unknown[] = []
    for (let i = 0; i < CASES; i++) {
      const c = randomCase(random, i)
      const ours = maximalMarginalRelevance(c.query, c.candidates, c.k, c.lambda)
      const theirs = langchain(c.query, c.candidates, c.lambda, c.k)
      if (JSON.stringify(ours) === JSON.stringify(theirs)) continue
      if (partsAtTie(c, ours, theirs)) ties++
      else {
        differences++
        if (firstDifferences.length < 3) firstDifferences.push({ case: i, k: c.k, lambda: c.lambda, ours, theirs })
      }
    }
    expect({ differences, firstDifferences }).toEqual({ differences: 0, firstDifferences: [] })
    expect(ties).toBe(0) // Gaussian candidates: no ties came up in these seeds
  })

  it('ties: duplicates go to the more relevant, then the earlier, in both (LangChain: the earlier)', () => {
    const query = [1, 0]
    const candidates = [
      [0, 1],
      [0, 1],
      [1, 0.1],
    ]
    expect(maximalMarginalRelevance(query, candidates, 3, 0.5)).toEqual(langchain(query, candidates, 0.5, 3))
  })

  it('the issue’s case: the candidate pointing away from the pick wins in both', () => {
    const unit = (v: number[]) => v.map((x) => x / Math.hypot(...v))
    const q = [1, 0, 0, 0]
    const candidates = [[0.9, 0.43589, 0, 0], unit([0.5, -0.9, 0.5, 0.7]), unit([0.3, -0.95, 0, 0.1])]
    expect(maximalMarginalRelevance(q, candidates, 2, 0.5)).toEqual([0, 2])
    expect(langchain(q, candidates, 0.5, 2)).toEqual([0, 2])
  })
})
