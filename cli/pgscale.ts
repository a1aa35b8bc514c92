#!/usr/bin/env node
import { existsSync } from 'node:fs'
import { Command, Option } from 'commander'
import { connect, InvalidArgumentError, loadConfig, type Database, type PgscaleConfig } from '../src/index.js'
import { redactUrl } from '../src/bench-kit.js'
import { runDoctor, runMigrate, runOptimize, runRecall, type CommandContext, type CommandOutcome } from './pgscale-commands.js'
import { runDrain } from './pgscale-drain.js'
import { runForget } from './pgscale-forget.js'
import { runMigrateModel } from './pgscale-migrate-model.js'
import { packageVersion } from './package-version.js'
import { positiveInt, runCli, writeJson } from './common.js'

/** Options every `pgscale` command takes. */
export interface OpsCliOptions {
  pg?: string
  config?: string
  json?: string
}

/** The config modules `pgscale` looks for in the working directory, in this order. */
export const CONFIG_FILES = ['pgscale.config.mjs', 'pgscale.config.js', 'pgscale.config.ts']

const HELP_AFTER = `
Config: --config FILE, else the first of ${CONFIG_FILES.join(', ')}
in the working directory; without one, optimize, recall, doctor, drain and forget work on what
the database recorded (pgscale_object_version), and migrate has nothing to create.

Exit codes: 0 done (or nothing to do); 1 a check found something, or a command failed;
2 a usage error (an unknown option, no database, no config for migrate); 130 interrupted.`

function withGlobals(command: Command): Command {
  return command
    .option('--pg <url>', 'the database (default: $DATABASE_URL)')
    .option(
      '--config <file>',
      `a module whose default export declares the stores and rollups (default: ${CONFIG_FILES.join(' / ')} if present; else what the database recorded)`,
    )
    .option('--json <file>', 'also write the result as JSON to FILE ("-" for stdout)')
}

/** Builds the `pgscale` command (commander wiring only; the work is in src/ops and cli/pgscale-commands.ts). */
export function pgscaleCommand(): Command {
  const program = new Command('pgscale')
    .description('Run what keeps a pgscale deployment migrated, tuned and fresh: for deploy steps and cron jobs.')
    .version(packageVersion(), '-V, --version', "print pgscale's version")
    .addHelpText('after', HELP_AFTER)
  withGlobals(program.command('migrate').description('create or upgrade the stores and rollups of the config module, as their owner'))
    .option('--print', 'write the migration as plain SQL to stdout instead of running it (rollups read their source column types)')
    .option('--runtime-role <role>', "grant this role what the app needs at run time (default: the config's runtimeRole)")
  withGlobals(program.command('optimize').description('tiers and recall tuning of every store (or one)'))
    .option('--store <table>', 'only this store')
    .option('--concurrently', 'build indexes with CREATE INDEX CONCURRENTLY (writes keep going)')
  withGlobals(program.command('drain').description('refresh the buckets tracked writes dirtied, for every tracked rollup (or one)'))
    .option('--rollup <table>', 'only this rollup')
    .option('--once', 'drain until the logs are empty, then exit (default: keep draining until SIGTERM or SIGINT)')
    .option('--interval <ms>', 'wait between looks when the logs are empty', positiveInt('--interval', 3_600_000), 1000)
    .option('--limit <n>', 'log rows claimed per transaction', positiveInt('--limit', 1_000_000), 1000)
  withGlobals(
    program
      .command('recall')
      .description("the recall monitor's report; exits 1 when a tenant is below its target or its figures are stale"),
  )
    .option('--store <table>', 'only this store')
    .addOption(
      new Option('--max-age-days <n>', 'figures older than this are stale').argParser(positiveInt('--max-age-days', 3650)).default(7),
    )
  withGlobals(
    program
      .command('doctor')
      .description(
        'records of dropped objects, objects that cannot be opened, invalid or unused indexes, tenants past a tier boundary, stale tuning, dirty-log backlogs; exits 1 on any',
      ),
  )
    .option('--store <table>', 'only this store')
    .option(
      '--max-backlog-seconds <n>',
      'a backlog older than this warns (fails at 10×)',
      positiveInt('--max-backlog-seconds', 86_400 * 30),
      600,
    )
  withGlobals(
    program
      .command('forget')
      .argument('[objects...]', 'records to remove: a key (store:public.rag_chunks, rollup:public.expenses_monthly) or a table name')
      .description(
        'remove the records (pgscale_object_version) of stores and rollups that no longer exist; exits 1 when a named one exists',
      ),
  ).option('--missing', 'every record whose object no longer exists')
  withGlobals(
    program
      .command('migrate-model')
      .description(
        "a tenant's embedding-model migration: its status in every store with spaces, or the backfill with the config's embed[space]",
      ),
  )
    .option('--tenant <id>', 'the tenant')
    .option('--status', 'only print where the migration stands')
    .option('--to <space>', "run the backfill into this space with the config module's embed[space]")
    .option('--switch', 'with --to: switch the tenant once the backfill caught up')
    .option('--store <table>', 'only this store')
  return program
}

async function configOf(command: string, options: OpsCliOptions): Promise<PgscaleConfig> {
  const file = options.config ?? CONFIG_FILES.find((f) => existsSync(f))
  const config = file ? await loadConfig(file) : {}
  if (command === 'migrate' && !config.stores?.length && !config.rollups?.length) {
    const why = file
      ? `${file} declares no store or rollup`
      : `no --config given and none of ${CONFIG_FILES.join(', ')} in ${process.cwd()}`
    throw Object.assign(new InvalidArgumentError(`migrate needs a config module with stores or rollups: ${why}`), { exitCode: 2 })
  }
  return config
}

async function database(options: OpsCliOptions, log: (line: string) => void): Promise<Database> {
  const url = options.pg ?? process.env.DATABASE_URL
  if (!url) throw Object.assign(new InvalidArgumentError('no database: pass --pg URL or set DATABASE_URL'), { exitCode: 2 })
  const db = await connect(url, { maxConnections: 2 })
  log(`pgscale: ${redactUrl(url)}`)
  return db
}

const COMMANDS = {
  migrate: runMigrate,
  optimize: runOptimize,
  drain: runDrain,
  recall: runRecall,
  doctor: runDoctor,
  'migrate-model': runMigrateModel,
}

async function runCommand(command: Command, db: Database, config: PgscaleConfig, ctx: CommandContext): Promise<CommandOutcome> {
  const options = command.opts() as OpsCliOptions & Record<string, unknown>
  if (command.name() === 'forget') return runForget(db, command.args, options, ctx)
  return COMMANDS[command.name() as keyof typeof COMMANDS](db, config, options, ctx)
}

/**
 * Runs `pgscale` with `argv` (without `node` and the script); resolves to the exit code: 0 done
 * (or nothing to do), 1 a check found something (or a command failed), 2 a usage error, 130
 * interrupted. With `--json`, the JSON report is written even when the command fails.
 *
 * ### Examples
 * ```ts
 * await pgscale(['doctor', '--pg', url, '--json', '-'])
 * ```
 */
export async function pgscale(argv: readonly string[]): Promise<number> {
  const program = pgscaleCommand()
  return runCli(program, argv, async (onInterrupt) => {
    const command = program.commands.find((c) => c.name() === argv[0])
    if (!command) return 2
    const options = command.opts() as OpsCliOptions
    const log = (line: string) => process.stderr.write(`${line}\n`)
    // With the JSON on stdout, the human lines go to stderr: stdout stays one JSON document.
    const print = options.json === '-' ? log : (line: string) => process.stdout.write(`${line}\n`)
    try {
      const config = await configOf(command.name(), options)
      const db = await database(options, log)
      try {
        const { report, exitCode } = await runCommand(command, db, config, { log, print, onInterrupt })
        writeJson(options.json, { command: command.name(), exitCode, ...(report as object) })
        return exitCode
      } finally {
        await db.close()
      }
    } catch (err) {
      // The JSON is written whatever happens: a cron job's parser always gets a document.
      const exitCode = (err as { exitCode?: number }).exitCode ?? 1
      const code = (err as { code?: unknown }).code
      writeJson(options.json, {
        command: command.name(),
        exitCode,
        error: { code: typeof code === 'string' ? code : undefined, message: String((err as Error).message ?? err) },
      })
      throw err
    }
  })
}

if (import.meta.url === `file://${process.argv[1]}` || process.argv[1]?.endsWith('/pgscale')) {
  process.exitCode = await pgscale(process.argv.slice(2))
}
