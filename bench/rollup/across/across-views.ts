import { explain, type MonthlyRollup } from '../../../src/index.js'
import { planShape } from '../../../src/bench-kit.js'
import { median, summarize } from '../../report/stats.js'
import { time, type RollupRun } from '../rollup-run.js'
import type { AcrossView } from './across-report.js'
import { rollupSide, type AcrossQuery } from './across-queries.js'

/**
 * Each view from the source, from the rollup table (`readAcross` on the rollup without levels)
 * and from the rollup with its levels (the one `readAcross` picks for the view), interleaved: one warm-up each, then `reps` rounds of the
 * three in turn (the order rotating); p50/p95 and the ratios of medians, with the three plans.
 *
 * ### Examples
 * ```ts
 * const views = await measureViews(run, side.rollup, acrossQueries(SOURCE, zone, months), log)
 * ```
 */
export async function measureViews(
  run: RollupRun,
  fleeted: MonthlyRollup,
  queries: readonly AcrossQuery[],
  log: (line: string) => void,
): Promise<AcrossView[]> {
  const out: AcrossView[] = []
  for (const q of queries) {
    log(`across tenants: ${q.name}`)
    const sides = [
      () => time(run.db, q.source),
      () => timed(() => rollupSide(run.rollup, run.db, q)),
      () => timed(() => rollupSide(fleeted, run.db, q)),
    ]
    for (const side of sides) await side()
    const ms: number[][] = [[], [], []]
    for (let i = 0; i < run.o.reps; i++)
      for (let k = 0; k < 3; k++) {
        const which = (i + k) % 3
        ms[which]!.push(await sides[which]!())
      }
    const [src, rol, flt] = ms as [number[], number[], number[]]
    const fleetQuery = fleeted.readAcrossQuery(run.db, q.rollup[0]!)
    const text = fleetQuery.compile(run.db).sql
    // The level read: `from <level> as r`, or a deferred level's source (its rows beside the rollup table's of pending months).
    const level = (fleeted.parts.levels ?? []).find(
      (l) => text.includes(`from ${l.qualified} as r`) || (l.deferred && text.includes(l.pending!)),
    )
    out.push({
      name: q.name,
      sourceMs: summarize(src),
      rollupMs: summarize(rol),
      fleetMs: summarize(flt),
      speedup: median(src) / median(rol),
      fleetSpeedup: median(src) / median(flt),
      readsFleet: level !== undefined && !level.perTenant,
      reads: level ? (level.perTenant ? 'per-tenant level' : level.deferred ? 'deferred fleet level' : 'fleet level') : 'rollup table',
      sourcePlan: planShape(await explain(run.db, q.source)),
      rollupPlan: planShape(await explain(run.db, run.rollup.readAcrossQuery(run.db, q.rollup[0]!))),
      fleetPlan: planShape(await explain(run.db, fleetQuery)),
    })
  }
  return out
}

async function timed(work: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now()
  await work()
  return performance.now() - t0
}
