import { forgetMissing, forgetRecord, recordedObjects, resolveRecord, InvalidArgumentError, type Database } from '../src/index.js'
import type { CommandContext, CommandOutcome, Options } from './pgscale-commands.js'

/**
 * `pgscale forget <object…>` / `pgscale forget --missing`: removes the records of objects that no
 * longer exist (`forgetRecord`: under the object's lock, deleted only while a relation is
 * missing). A named object that exists is kept, and the exit code is 1.
 */
export async function runForget(db: Database, objects: readonly string[], options: Options, ctx: CommandContext): Promise<CommandOutcome> {
  if (!objects.length && !options.missing)
    throw Object.assign(
      new InvalidArgumentError('forget needs the objects to forget (store:public.rag_chunks, or a table name), or --missing'),
      {
        exitCode: 2,
      },
    )
  const records = await recordedObjects(db)
  const keys = objects.map((name) => resolveRecord(records, name).key)
  const outcomes = options.missing ? await forgetMissing(db) : []
  for (const key of keys) if (!outcomes.some((o) => o.key === key)) outcomes.push(await forgetRecord(db, key))
  for (const o of outcomes)
    ctx.print(
      o.result === 'forgotten'
        ? `forgot ${o.key}: ${o.missing.join(', ')} no longer exist(s)`
        : `kept ${o.key}: it exists (pgscale forget removes only records of objects that are gone; drop it first)`,
    )
  if (!outcomes.length) ctx.print(`nothing to do: all ${records.length} recorded object(s) exist`)
  const kept = outcomes.filter((o) => o.result === 'exists')
  return { report: { forgotten: outcomes.filter((o) => o.result === 'forgotten'), kept }, exitCode: kept.length ? 1 : 0 }
}
