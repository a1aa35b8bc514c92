import { opsRollups, type Database, type MonthlyRollup, type PgscaleConfig } from '../src/index.js'
import { sourceOf, type CommandContext, type CommandOutcome, type Options } from './pgscale-commands.js'

async function drainOnce(db: Database, rollups: readonly MonthlyRollup[], limit: number, ctx: CommandContext) {
  const counts: Record<string, number> = {}
  for (const rollup of rollups) {
    let buckets = 0
    for (;;) {
      const done = await rollup.refreshDirty(db, { limit })
      buckets += done.buckets
      ctx.log(`drain: ${rollup.parts.target.name} ${buckets} bucket(s), ${done.remaining} log row(s) left`)
      if (done.remaining === 0 || done.buckets === 0) break
    }
    counts[rollup.parts.target.name] = buckets
  }
  return counts
}

async function drainUntilStopped(db: Database, rollups: readonly MonthlyRollup[], options: Options, ctx: CommandContext) {
  const counts: Record<string, number> = {}
  const stop = new AbortController()
  const onTerm = () => stop.abort()
  process.once('SIGTERM', onTerm)
  ctx.log(`drain: ${rollups.map((r) => r.parts.target.name).join(', ')}; SIGTERM or SIGINT stops after the refresh in flight`)
  const limit = options.limit as number
  const drained = Promise.all(rollups.map((r) => r.drain(db, { limit, intervalMs: options.interval as number, signal: stop.signal })))
  ctx.onInterrupt(async () => {
    stop.abort()
    await drained
  })
  const results = await drained.finally(() => process.off('SIGTERM', onTerm))
  rollups.forEach((r, i) => (counts[r.parts.target.name] = results[i]!.buckets))
  return counts
}

/**
 * `pgscale drain`: `--once` empties the logs; otherwise every rollup drains until SIGTERM/SIGINT,
 * then exits 0. With no tracked rollup it says so and exits 0 at once.
 */
export async function runDrain(db: Database, config: PgscaleConfig, options: Options, ctx: CommandContext): Promise<CommandOutcome> {
  const rollups = await opsRollups(db, config, options.rollup as string | undefined)
  if (!rollups.length) {
    ctx.print(`nothing to do: no tracked rollup (${sourceOf(config, 'rollups')})`)
    return { report: { rollups: {} }, exitCode: 0 }
  }
  const counts = options.once
    ? await drainOnce(db, rollups, options.limit as number, ctx)
    : await drainUntilStopped(db, rollups, options, ctx)
  for (const [name, buckets] of Object.entries(counts)) ctx.print(`${name}: ${buckets} bucket(s) refreshed`)
  return { report: { rollups: counts }, exitCode: 0 }
}
