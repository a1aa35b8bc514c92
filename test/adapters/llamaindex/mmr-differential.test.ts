import { beforeAll, expect, it } from 'vitest'
import { maximalMarginalRelevance } from '../../../src/index.js'
import { seededRandom } from '../../../src/bench-kit.js'
import { describeUnless } from '../../support/skip.js'
import { LLAMAINDEX_MISSING } from './llamaindex-kit.js'

/**
 * pgscale's MMR beside LlamaIndex.TS's `getTopKMMREmbeddings` (`@llamaindex/core/embeddings`, what
 * SimpleVectorStore's `mmr` mode calls), where the two mean the same. LlamaIndex (TS, as Python's
 * `get_top_k_mmr_embeddings`) scores each candidate against the most recent pick only, not the max
 * over all picks: the two agree on the first two picks (the first pick is the only one to compare
 * with) and may part from the third. So: the first min(k, 2) picks, on seeded Gaussian cases, with
 * lambda in its own `mmrThreshold` slot (0 excluded: `mmrThreshold || 0.5` turns it into 0.5). From
 * the third pick on, how often they part is counted and must be more than none (the semantics
 * differ, docs/adapters/llamaindex.md says how).
 */
type LlamaMmr = (
  query: number[],
  embeddings: number[][],
  similarityFn: null,
  topK: number | null,
  ids: null,
  cutoff: null,
  mmrThreshold: number,
) => [number[], number[]]

const CASES = 1500

describeUnless(LLAMAINDEX_MISSING)('MMR: pgscale and LlamaIndex.TS where they mean the same', () => {
  let llama: LlamaMmr
  beforeAll(async () => {
    llama = (await import('@llamaindex/core/embeddings')).getTopKMMREmbeddings as unknown as LlamaMmr
  })

  it(`${CASES} seeded cases: the same first two picks; later picks part where "most recent" and "max" differ`, () => {
    const random = seededRandom('mmr-differential:llamaindex')
    let firstTwoDifferences = 0
    let laterPartings = 0
    let comparedLater = 0
    for (let i = 0; i < CASES; i++) {
      const dimensions = 2 + random.int(15)
      const vector = () => Array.from({ length: dimensions }, () => random.gaussian())
      const count = 1 + random.int(30)
      const k = 1 + random.int(count + 1)
      const lambda = i % 7 === 0 ? 1 : 0.01 + 0.99 * random.next()
      const query = vector()
      const candidates = Array.from({ length: count }, vector)
      const ours = maximalMarginalRelevance(query, candidates, k, lambda)
      const theirs = llama(query, candidates, null, k, null, null, lambda)[1]
      if (JSON.stringify(ours.slice(0, 2)) !== JSON.stringify(theirs.slice(0, 2))) firstTwoDifferences++
      if (Math.min(k, count) >= 3 && lambda < 1) {
        comparedLater++
        if (JSON.stringify(ours) !== JSON.stringify(theirs)) laterPartings++
      }
    }
    expect(firstTwoDifferences).toBe(0)
    expect(comparedLater).toBeGreaterThan(500)
    expect(laterPartings).toBeGreaterThan(0)
    console.log(
      `llamaindex mmr: ${CASES} cases, first two picks 0 differences; from the third pick ${laterPartings} of ${comparedLater} part`,
    )
  })
})
