import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { prepareScenarios } from '../../bench/budget/budget-scenarios.js'
import { measureAll, measureScenario, overBudget, platformKey, readBaseline } from '../../bench/budget/run-budget.js'
import { useTestDatabase } from '../support/test-database.js'
import { skipBecause } from '../support/skip.js'

/**
 * The performance budget: opt-in, because it measures (PGSCALE_PERF_BUDGET=1 npm test -- budget).
 * Fails when a budgeted ratio (pgscale's client CPU per call ÷ raw pg's, same SQL) grows more than
 * 20% over bench/baseline.json for this platform, or over PGSCALE_PERF_BASELINE (a run of the base
 * branch on the same runner).
 */
const enabled = process.env.PGSCALE_PERF_BUDGET === '1'
const t = useTestDatabase()
const baselineFile = process.env.PGSCALE_PERF_BASELINE ?? join(import.meta.dirname, '..', '..', 'bench', 'baseline.json')

describe('performance budget', () => {
  if (!enabled || !t.target.url) {
    const reason = !enabled
      ? 'opt-in: run PGSCALE_PERF_BUDGET=1 npm test -- budget'
      : 'needs a server URL for the raw pg client (not PGlite)'
    console.warn(`[budget] skipped: ${reason}`)
    it.skip(`skipped — ${reason}`, () => {})
    return
  }

  it('every budgeted path stays within +20% of the baseline ratio', async (ctx) => {
    const entry = readBaseline(baselineFile)[platformKey()]
    if (!entry) {
      console.warn(
        `[budget] no baseline for ${platformKey()} in ${baselineFile}: record one with npm run bench:budget -- --write-baseline bench/baseline.json`,
      )
      return skipBecause(ctx, `no performance baseline for ${platformKey()} in ${baselineFile}`)
    }
    const { scenarios, close } = await prepareScenarios(t.db, t.url!)
    try {
      const results = await measureAll(scenarios)
      const ratios = Object.fromEntries(Object.entries(results).map(([name, m]) => [name, m.ratio]))
      console.log(`[budget] ratios ${JSON.stringify(ratios)} vs baseline ${JSON.stringify(entry.ratios)}`)
      expect(overBudget(ratios, entry.ratios)).toEqual([])
    } finally {
      await close()
    }
  }, 600_000)

  it('bites: an extra round trip per search goes over budget', async () => {
    // The injected and the clean search run interleaved block by block, so machine drift hits both;
    // how much the injection adds is what would move the budgeted ratio.
    const clean = await prepareScenarios(t.db, t.url!)
    const injected = await prepareScenarios(t.db, t.url!, { extraRoundTripPerSearch: true })
    try {
      const cleanSearch = clean.scenarios.find((s) => s.name === 'search')!
      const slowSearch = injected.scenarios.find((s) => s.name === 'search')!
      const base = await measureScenario(cleanSearch, 20)
      const growth = await measureScenario({ ...cleanSearch, pgscale: slowSearch.pgscale, raw: cleanSearch.pgscale }, 30)
      const regressed = base.ratio * growth.ratio
      console.log(
        `[budget] search ratio ${base.ratio.toFixed(2)}; an extra round trip multiplies pgscale's CPU per search by ${growth.ratio.toFixed(2)} → ${regressed.toFixed(2)}`,
      )
      expect(overBudget({ search: regressed }, { search: base.ratio })).toHaveLength(1)
    } finally {
      await injected.close()
      await clean.close()
    }
  }, 600_000)
})
