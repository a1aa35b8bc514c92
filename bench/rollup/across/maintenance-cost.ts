import { sql } from 'kysely'
import type { MonthlyRollup } from '../../../src/index.js'
import { dirtyKeyNames, localMonth } from '../../../src/bench-kit.js'
import { median, summarize } from '../../report/stats.js'
import type { MaintenanceCost } from './across-report.js'
import { SOURCE, type RollupRun } from '../rollup-run.js'
import { CATEGORIES } from '../../synthetic/expenses.js'

/**
 * What the levels add to the rollup's writes (`label` says which, in each row), side by side in one
 * loop (the order alternating per repetition): `refreshAt` of this month for the big and a typical
 * tenant, and a drain (`refreshDirty`) of the same dirty keys — `tenants` typical tenants × this
 * month and the month before, marked in both rollups' logs — by the plain rollup and by the one
 * with a fleet level. Each repetition first writes what a refresh follows in an app (not timed):
 * one new source row in the bucket (refreshAt) or in each bucket (drain), its category turning
 * through the seed's, so both rollups refresh the same change.
 *
 * ### Examples
 * ```ts
 * const costs = await maintenanceCost(run, side.rollup, { reps: 30, tenants: 200, rounds: 5, label: 'fleet level' })
 * ```
 */
export async function maintenanceCost(
  run: RollupRun,
  fleeted: MonthlyRollup,
  o: { reps: number; tenants: number; rounds: number; label?: string },
): Promise<MaintenanceCost[]> {
  const suffix = o.label ? ` (${o.label})` : ''
  const thisMonth = localMonth(run.until, run.o.zone)
  const out: MaintenanceCost[] = []
  for (const [label, tenantId] of [
    ['refreshAt, the big tenant', 1],
    ['refreshAt, a typical tenant', Math.min(2, run.o.tenants)],
  ] as const) {
    const moment = `${thisMonth.slice(0, 7)}-15`
    let rep = 0
    const write = () => insertRows(run, [tenantId], [moment], rep++)
    out.push(
      await sideBySide(
        `${label}${suffix}`,
        o.reps,
        {
          plain: () => run.rollup.refreshAt(run.db, { tenantId, moment }),
          fleet: () => fleeted.refreshAt(run.db, { tenantId, moment }),
        },
        write,
      ),
    )
  }
  const drain = await drainCost(run, fleeted, thisMonth, o)
  out.push({ ...drain, what: `${drain.what}${suffix}` })
  return out
}

/** Both rollups tracked; each round marks the same keys in both logs, then drains each (timed). */
async function drainCost(run: RollupRun, fleeted: MonthlyRollup, thisMonth: string, o: { tenants: number; rounds: number }) {
  const rollups = { plain: run.rollup, fleet: fleeted }
  for (const r of Object.values(rollups)) await r.track(run.db)
  const last = Math.min(run.o.tenants, o.tenants + 1)
  const mark = async (r: MonthlyRollup) =>
    sql`insert into ${sql.raw(dirtyKeyNames(r.parts).log)} (tenant_id, month)
      select t, m from generate_series(2, ${last}) as t, unnest(array[${thisMonth}::date, (${thisMonth}::date - interval '1 month')::date]) as m`.execute(
      run.db,
    )
  const tenants = Array.from({ length: last - 1 }, (_, i) => i + 2)
  const moments = [`${thisMonth.slice(0, 7)}-15`, previousMonthMid(thisMonth)]
  let round = 0
  try {
    const keys = 2 * (last - 1)
    const title = `refreshDirty of ${keys} buckets (${last - 1} typical tenants × 2 months, a new source row in each)`
    return await sideBySide(
      title,
      o.rounds,
      {
        plain: async () => {
          await mark(rollups.plain)
          return { timed: () => run.rollup.refreshDirty(run.db, { limit: keys + 1 }) }
        },
        fleet: async () => {
          await mark(rollups.fleet)
          return { timed: () => fleeted.refreshDirty(run.db, { limit: keys + 1 }) }
        },
      },
      () => insertRows(run, tenants, moments, round++),
    )
  } finally {
    for (const r of Object.values(rollups)) await r.untrack(run.db)
  }
}

type Step = () => Promise<unknown>

/** One new source row per tenant × moment (amount 1.00, paid), its category the seed's `turn`-th (cycling). */
async function insertRows(run: RollupRun, tenants: readonly number[], moments: readonly string[], turn: number): Promise<void> {
  const category = CATEGORIES[turn % CATEGORIES.length]!
  await sql`insert into ${sql.raw(SOURCE)} (tenant_id, paid_at, category, amount, status)
    select t, (m::timestamp at time zone ${run.o.zone}), ${category}, 1.00, 'paid'
    from unnest(${tenants}::bigint[]) as t, unnest(${moments}::text[]) as m`.execute(run.db)
}

/** The 15th of the month before `month` (`YYYY-MM-01`). */
function previousMonthMid(month: string): string {
  const [y, m] = month.split('-').map(Number) as [number, number]
  return m === 1 ? `${y - 1}-12-15` : `${y}-${String(m - 1).padStart(2, '0')}-15`
}

/**
 * Times `plain` and `fleet` alternately (`reps` each, order switching); a step may return `{ timed }`
 * to time only that part; `beforeRep` (not timed) runs before each repetition's pair.
 */
async function sideBySide(what: string, reps: number, steps: { plain: Step; fleet: Step }, beforeRep?: Step): Promise<MaintenanceCost> {
  const ms = { plain: [] as number[], fleet: [] as number[] }
  const once = async (which: 'plain' | 'fleet') => {
    let t0 = performance.now()
    const prepared = await steps[which]()
    if (prepared && typeof prepared === 'object' && 'timed' in prepared) {
      t0 = performance.now()
      await (prepared as { timed: Step }).timed()
    }
    ms[which].push(performance.now() - t0)
  }
  await once('plain') // warm-up of each (not kept)
  await once('fleet')
  ms.plain.length = 0
  ms.fleet.length = 0
  for (let i = 0; i < reps; i++) {
    await beforeRep?.()
    for (const which of i % 2 ? (['fleet', 'plain'] as const) : (['plain', 'fleet'] as const)) await once(which)
  }
  const ratios = ms.fleet.map((f, i) => f / ms.plain[i]!)
  return { what, plainMs: summarize(ms.plain), fleetMs: summarize(ms.fleet), ratio: median(ratios) }
}
