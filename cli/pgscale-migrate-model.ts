import { InvalidArgumentError, opsStores, PgVectorStore, type Database, type PgscaleConfig } from '../src/index.js'
import type { CommandContext, CommandOutcome, Options } from './pgscale-commands.js'

/**
 * `pgscale migrate-model --tenant T --status`: where each store's migration of the tenant stands
 * (active space, target, embedded, pending, rate, ETA). `pgscale migrate-model --tenant T --to S`:
 * runs the backfill with the config module's `embed[S]` (a store's spaces are found in the
 * database), printing progress; `--switch` switches when it caught up. Exit 1 when a store has no
 * such space or the tenant cannot switch yet.
 */
export async function runMigrateModel(db: Database, config: PgscaleConfig, options: Options, ctx: CommandContext): Promise<CommandOutcome> {
  const tenant = options.tenant as string | undefined
  if (!tenant) throw Object.assign(new InvalidArgumentError('migrate-model needs --tenant <id>'), { exitCode: 2 })
  const to = options.to as string | undefined
  if (!options.status && !to)
    throw Object.assign(new InvalidArgumentError('migrate-model needs --status, or --to <space> to run the backfill'), { exitCode: 2 })
  const embed = to ? config.embed?.[to] : undefined
  if (to && typeof embed !== 'function') {
    throw Object.assign(
      new InvalidArgumentError(
        `migrate-model --to ${to} needs the space's embedding function: export default defineConfig({ embed: { ${to}: (texts) => model.embed(texts) } })`,
      ),
      { exitCode: 2 },
    )
  }
  const configs = (await opsStores(db, config, options.store as string | undefined)).filter(
    (c) => !/__[a-z][a-z0-9_]*$/.test(c.table ?? ''),
  )
  const report: unknown[] = []
  let exitCode = 0
  for (const storeConfig of configs) {
    const store = await PgVectorStore.open(db, { ...storeConfig, migrate: false, querySample: false })
    try {
      const spaces = await store.listSpaces()
      if (spaces.length === 1) continue
      const name = store.config.qualified
      if (to && embed) {
        if (!spaces.some((s) => s.name === to)) {
          ctx.print(`${name}: no embedding space "${to}" (spaces: ${spaces.map((s) => s.name).join(', ')})`)
          exitCode = 1
          continue
        }
        const result = await store.migrateTenant(tenant, {
          to,
          embed,
          switch: Boolean(options.switch),
          onProgress: ({ embedded }) => ctx.log(`${name} ${tenant}: ${embedded} chunks embedded`),
        })
        ctx.print(`${name} ${tenant}: ${result.embedded} embedded in ${result.batches} batch(es)${result.switched ? ', switched' : ''}`)
      }
      const status = await store.migrationStatus(tenant)
      report.push({ store: name, ...status })
      const rate = status.chunksPerSecond ? `, ${Math.round(status.chunksPerSecond)} chunks/s` : ''
      const eta = status.etaSeconds !== null && status.pending > 0 ? `, ETA ${Math.ceil(status.etaSeconds)} s` : ''
      ctx.print(
        `${name} ${tenant}: searches "${status.active}"${status.target ? `, migrating to "${status.target}"` : ''} (${status.state}): ` +
          `${status.embedded}/${status.total} embedded, ${status.pending} pending${rate}${eta}${status.previous ? `; can roll back to "${status.previous}"` : ''}`,
      )
    } finally {
      await store.close()
    }
  }
  if (!report.length) ctx.print(`nothing to do: no store with embedding spaces (${configs.length} store(s) looked at)`)
  return { report: { tenant, stores: report }, exitCode }
}
