import { writeFileSync } from 'node:fs'
import { Command, CommanderError, InvalidArgumentError as CommanderInvalidArgument, Option } from 'commander'
import { PgScaleError, provision, PROVIDERS, type ProvisionedDatabase, type ProviderName } from '../src/index.js'
import { redactUrl } from '../src/bench-kit.js'
import { parseTenantMix, tenantsOf, TenantMixError } from '../bench/rag/tenant-mix.js'
import type { TenantSize } from '../bench/synthetic/corpus.js'
import { dropBenchSchema } from '../bench/report/bench-cleanup.js'

/** Options every bench CLI shares. */
export interface CommonOptions {
  pg?: string
  db: ProviderName | 'auto'
  json?: string
  keep?: boolean
  citusWorkers?: number
}

/** What a CLI's main function receives: a way to register cleanup for Ctrl-C. */
export type OnInterrupt = (cleanup: () => Promise<void>) => void

/**
 * Adds `--pg`, `--db` and `--json` to a command: where it runs and where its JSON report goes.
 * `defaultDb` is `auto` unless the command needs a server (then `local`).
 */
export function addConnectionOptions(command: Command, defaultDb: ProviderName | 'auto' = 'auto'): Command {
  return command
    .option('--pg <url>', 'PostgreSQL URL (PostgreSQL >= 15 with pgvector >= 0.8); implies --db url')
    .addOption(
      new Option('--db <provider>', `where to run: auto tries ${PROVIDERS.slice(1).join(' → ')}`)
        .choices([...PROVIDERS])
        .default(defaultDb),
    )
    .option('--json <file>', 'also write the report as JSON to FILE ("-" for stdout, which silences the human report)')
    .option(
      '--citus-workers <n>',
      'with --db local: a Citus coordinator and N workers on loopback (Citus must be installed)',
      positiveInt('--citus-workers', 16),
    )
}

/** Adds the connection options and `--keep` to a command. */
export function addCommonOptions(command: Command, defaultDb: ProviderName | 'auto' = 'auto'): Command {
  return addConnectionOptions(command, defaultDb).option('--keep', 'keep the data the bench created (default: drop it)', false)
}

/** A commander parser for positive integers, with a one-line error. */
export function positiveInt(name: string, max = Number.MAX_SAFE_INTEGER) {
  return (value: string): number => {
    const n = Number(value)
    if (!/^\d+$/.test(value) || !Number.isSafeInteger(n) || n < 1 || n > max) {
      throw new CommanderInvalidArgument(`${name} must be an integer from 1 to ${max.toLocaleString('en-US')}`)
    }
    return n
  }
}

/**
 * A commander parser for an ascending list of positive integers (`1,2,4,8`), with a one-line error.
 *
 * ### Examples
 * ```ts
 * .option('--clients <list>', 'clients per step', ascendingIntList('--clients', 1000), [1, 2, 4])
 * ```
 */
export function ascendingIntList(name: string, max: number) {
  return (value: string): number[] => {
    const list = value.split(',').map((v) => positiveInt(name, max)(v.trim()))
    if (list.some((n, i) => i > 0 && n <= list[i - 1]!)) throw new CommanderInvalidArgument(`${name} must be ascending, e.g. 1,2,4,8`)
    return list
  }
}

/**
 * The tenants of `--tenant-mix` scaled to `--chunks`; a malformed mix is a usage error (exit 2).
 *
 * ### Examples
 * ```ts
 * const tenants = tenantsOption('zipf:100', 100_000)
 * ```
 */
export function tenantsOption(mix: string, chunks: number): TenantSize[] {
  try {
    return tenantsOf(parseTenantMix(mix), chunks)
  } catch (err) {
    if (err instanceof TenantMixError) throw Object.assign(err, { exitCode: 2 })
    throw err
  }
}

/**
 * Registers the SIGINT/SIGTERM cleanup of a bench that works in its own schema: drop it (unless `keep`),
 * then stop the database.
 *
 * ### Examples
 * ```ts
 * dropSchemaOnInterrupt(onInterrupt, provisioned, 'pgscale_rag_load', o.keep)
 * ```
 */
export function dropSchemaOnInterrupt(
  onInterrupt: OnInterrupt,
  provisioned: ProvisionedDatabase,
  schema: string,
  keep: boolean | undefined,
): void {
  onInterrupt(async () => {
    if (!keep) {
      await dropBenchSchema(provisioned.db, schema).catch(() => {})
    }
    await provisioned.stop()
  })
}

/** Provisions the database the options ask for and says where it ran (stderr). */
export async function provisionFor(
  options: Pick<CommonOptions, 'pg' | 'db' | 'citusWorkers'>,
  log: (line: string) => void,
): Promise<ProvisionedDatabase> {
  const provider = options.pg ? 'url' : options.db
  const citus = options.citusWorkers === undefined ? undefined : { workers: options.citusWorkers }
  const provisioned = await provision({ provider, url: options.pg, citus })
  const { info } = provisioned
  for (const s of info.skipped) log(`skipped ${s.provider}: ${s.reason}`)
  log(
    `running on ${info.provider}${provisioned.url ? ` (${redactUrl(provisioned.url)})` : ''}: PostgreSQL ${info.serverVersion}, pgvector ${info.pgvectorVersion}` +
      (info.citus ? `, Citus ${info.citus.version} with ${info.citus.workers} worker(s)` : ''),
  )
  return provisioned
}

/** Writes the JSON report where `--json` says. */
export function writeJson(target: string | undefined, report: unknown): void {
  if (!target) return
  const text = JSON.stringify(report, null, 2) + '\n'
  if (target === '-') process.stdout.write(text)
  else writeFileSync(target, text)
}

/**
 * Runs a CLI's main function: a usage error or a PgScaleError prints one line and exits non-zero,
 * without a stack trace; Ctrl-C (SIGINT) and SIGTERM run `onInterrupt` (cleanup) once and exit 130
 * and 143 (a command that listens for SIGTERM itself keeps it: `pgscale drain`). `main` may resolve to
 * an exit code (a budget over its limit: 1); nothing means 0. Every CLI in `cli/` has this shape:
 * `xCommand()` builds the commander program, `x(argv)` calls `runCli` with the work from `bench/`.
 *
 * ### Examples
 * ```ts
 * const program = rollupBenchCommand()
 * process.exitCode = await runCli(program, process.argv.slice(2), async (onInterrupt) => { ... })
 * ```
 */
export async function runCli(
  program: Command,
  argv: readonly string[],
  main: (onInterrupt: OnInterrupt) => Promise<number | void>,
): Promise<number> {
  program.exitOverride()
  program.configureOutput({ writeErr: (text) => process.stderr.write(text.startsWith('error:') ? `${program.name()}: ${text}` : text) })
  let cleanup: (() => Promise<void>) | undefined
  let stopping = false
  const onSignal = (signal: NodeJS.Signals) => {
    // A command that stops gracefully on SIGTERM itself (`pgscale drain`) listens for it too: its own.
    if (signal === 'SIGTERM' && process.listenerCount('SIGTERM') > 1) return
    if (stopping) return
    stopping = true
    process.stderr.write(`\n${program.name()}: ${signal === 'SIGINT' ? 'interrupted' : 'terminated'}, cleaning up\n`)
    void (cleanup?.() ?? Promise.resolve()).finally(() => process.exit(signal === 'SIGINT' ? 130 : 143))
  }
  try {
    await program.parseAsync(argv as string[], { from: 'user' })
    process.on('SIGINT', onSignal)
    process.on('SIGTERM', onSignal)
    const code = await main((fn) => (cleanup = fn))
    return code ?? 0
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : 2
    const message = err instanceof PgScaleError ? err.message : err instanceof Error ? err.message : String(err)
    process.stderr.write(`${program.name()}: ${message}\n`)
    if (process.env.PGSCALE_DEBUG && err instanceof Error) process.stderr.write(`${err.stack}\n`)
    return (err as { exitCode?: number }).exitCode ?? 1
  } finally {
    process.off('SIGINT', onSignal)
    process.off('SIGTERM', onSignal)
  }
}
