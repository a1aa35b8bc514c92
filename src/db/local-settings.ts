import { InvalidArgumentError } from '../errors.js'
import { dollarQuote } from '../sql/literal.js'

/**
 * Settings applied with `SET LOCAL` for one transaction: `{ 'hnsw.ef_search': 100 }`. A value
 * `{ text }` is any text, rendered as a dollar-quoted constant (`src/sql/literal.ts`, proven
 * safe): what a custom setting such as `pgscale.tenant_id` holds.
 */
export type LocalSettings = Readonly<Record<string, string | number | boolean | { text: string }>>

const SETTING_NAME = /^[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)?$/
const SETTING_VALUE = /^[A-Za-z0-9_.-]{1,64}$/

/**
 * Renders validated `SET LOCAL` statements. `SET` takes no bound parameters, so names and values
 * are checked against strict patterns (numbers, booleans, enum words, sizes like `1GB`) and never
 * carry user text into SQL. On Citus, `citus.propagate_set_commands = 'local'` comes first so the
 * shards see the settings (Citus forwards only SET LOCAL, not set_config).
 *
 * ### Examples
 * ```ts
 * renderSetLocal({ 'hnsw.ef_search': 100, 'hnsw.iterative_scan': 'relaxed_order' }, false)
 * // "SET LOCAL hnsw.ef_search = '100'; SET LOCAL hnsw.iterative_scan = 'relaxed_order'"
 * ```
 */
export function renderSetLocal(settings: LocalSettings, citus: boolean): string {
  const statements = renderSettings(settings, 'SET LOCAL')
  if (citus && statements.length > 0) statements.unshift(`SET LOCAL citus.propagate_set_commands = 'local'`)
  return statements.join('; ')
}

/**
 * One simple-protocol message: read-only, the settings as `SET LOCAL` (the Citus line first when
 * `citus`), then `statement` (already free of placeholders). PostgreSQL runs it as one implicit
 * transaction, so the settings end with the message.
 *
 * ### Examples
 * ```ts
 * settingsMessage({ 'hnsw.ef_search': 100 }, false, 'select 1')
 * // "SET LOCAL transaction_read_only = 'on'; SET LOCAL hnsw.ef_search = '100'; select 1"
 * ```
 */
export function settingsMessage(settings: LocalSettings, citus: boolean, statement: string): string {
  if (citus) return `${renderSetLocal({ transaction_read_only: 'on', ...settings }, citus)}; ${statement}`
  let prefix = renderedPrefixes.get(settings)
  if (prefix === undefined) {
    prefix = renderSetLocal({ transaction_read_only: 'on', ...settings }, false)
    // Only a frozen object cannot change after its text is kept.
    if (Object.isFrozen(settings)) renderedPrefixes.set(settings, prefix)
  }
  return `${prefix}; ${statement}`
}

/** The `SET LOCAL` text of frozen settings objects (a search reuses one per `ef_search` and scan mode). */
const renderedPrefixes = new WeakMap<LocalSettings, string>()

/**
 * Session-level `SET` statements and the `RESET`s that undo them, for work that cannot run in a
 * transaction block (`CREATE INDEX CONCURRENTLY`). Validated like {@link renderSetLocal}.
 *
 * ### Examples
 * ```ts
 * renderSessionSettings({ maintenance_work_mem: '1GB' })
 * // { set: "SET maintenance_work_mem = '1GB'", reset: 'RESET maintenance_work_mem' }
 * ```
 */
export function renderSessionSettings(settings: LocalSettings): { set: string; reset: string } {
  return {
    set: renderSettings(settings, 'SET').join('; '),
    reset: Object.keys(settings)
      .map((name) => `RESET ${name}`)
      .join('; '),
  }
}

function renderSettings(settings: LocalSettings, command: 'SET' | 'SET LOCAL'): string[] {
  const statements: string[] = []
  for (const [name, raw] of Object.entries(settings)) {
    if (!SETTING_NAME.test(name)) throw new InvalidArgumentError(`invalid setting name ${JSON.stringify(name)}`)
    statements.push(`${command} ${name} = ${renderValue(name, raw)}`)
  }
  return statements
}

function renderValue(name: string, raw: LocalSettings[string]): string {
  if (typeof raw === 'object' && raw !== null) {
    if (typeof raw.text !== 'string') throw new InvalidArgumentError(`setting ${name}: { text } must hold a string`)
    return dollarQuote(raw.text)
  }
  return `'${settingValue(name, raw)}'`
}

function settingValue(name: string, raw: string | number | boolean): string {
  if (typeof raw === 'boolean') return raw ? 'on' : 'off'
  if (typeof raw === 'number') {
    if (!Number.isFinite(raw)) throw new InvalidArgumentError(`setting ${name}: ${raw} is not a finite number`)
    return String(raw)
  }
  if (typeof raw === 'string' && SETTING_VALUE.test(raw)) return raw
  throw new InvalidArgumentError(`setting ${name}: value ${JSON.stringify(raw)} is not a number, boolean or plain word`)
}
