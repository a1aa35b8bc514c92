#!/usr/bin/env node
import { existsSync } from 'node:fs'
import { Command, Option } from 'commander'
import { connect, loadConfig, type Database, type PgscaleConfig } from '../src/index.js'
import { redactUrl } from '../src/bench-kit.js'
import { runDoctor, runDrain, runMigrate, runOptimize, runRecall } from './pgscale-commands.js'
import { positiveInt, runCli, writeJson } from './common.js'

/** Options every `pgscale` command takes. */
export interface OpsCliOptions {
  pg?: string
  config?: string
  json?: string
}

const CONFIG_FILES = ['pgscale.config.mjs', 'pgscale.config.js', 'pgscale.config.ts']

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
  const program = new Command('pgscale').description(
    'Run what keeps a pgscale deployment migrated, tuned and fresh: for deploy steps and cron jobs.',
  )
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
      .description('invalid or unused indexes, tenants past a tier boundary, stale tuning, dirty-log backlogs; exits 1 on any'),
  )
    .option('--store <table>', 'only this store')
    .option(
      '--max-backlog-seconds <n>',
      'a backlog older than this warns (fails at 10×)',
      positiveInt('--max-backlog-seconds', 86_400 * 30),
      600,
    )
  return program
}

async function configOf(options: OpsCliOptions): Promise<PgscaleConfig> {
  const file = options.config ?? CONFIG_FILES.find((f) => existsSync(f))
  return file ? loadConfig(file) : {}
}

async function database(options: OpsCliOptions, log: (line: string) => void): Promise<Database> {
  const url = options.pg ?? process.env.DATABASE_URL
  if (!url) throw Object.assign(new Error('no database: pass --pg URL or set DATABASE_URL'), { exitCode: 2 })
  const db = await connect(url, { maxConnections: 2 })
  log(`pgscale: ${redactUrl(url)}`)
  return db
}

const COMMANDS = { migrate: runMigrate, optimize: runOptimize, drain: runDrain, recall: runRecall, doctor: runDoctor }

/**
 * Runs `pgscale` with `argv` (without `node` and the script); resolves to the exit code: 0 fine,
 * 1 a check found something (or a command failed), 2 a usage error.
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
    const options = command.opts() as OpsCliOptions & Record<string, unknown>
    const log = (line: string) => process.stderr.write(`${line}\n`)
    const config = await configOf(options)
    const db = await database(options, log)
    try {
      const run = COMMANDS[command.name() as keyof typeof COMMANDS]
      const { report, exitCode } = await run(db, config, options, { log, onInterrupt })
      writeJson(options.json, report)
      return exitCode
    } finally {
      await db.close()
    }
  })
}

if (import.meta.url === `file://${process.argv[1]}` || process.argv[1]?.endsWith('/pgscale')) {
  process.exitCode = await pgscale(process.argv.slice(2))
}
