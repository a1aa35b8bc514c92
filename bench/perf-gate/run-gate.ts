import { execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'
import pg from 'pg'
import { prepareGate, type GateScenario, type Pgscale } from './gate-scenarios.js'
import {
  callsPerBlock,
  DEFAULT_GATE_BOUND,
  failures,
  gateExitCode,
  renderGate,
  roundOrder,
  summarizeScenario,
  type GateBlock,
  type GateSummary,
} from './gate-stats.js'

/**
 * The regression gate (`node scripts/perf-gate.mjs`): the hot paths of the base commit and of the
 * head, both loaded into this one process (each tree's src/ through tsx, each side over a database
 * of its own), measured in alternating blocks — base then head, or head then base — as CPU time of
 * this Node process per call (`process.cpuUsage`, not wall time: the server's work is not ours).
 * One process for both sides: the same heap, JIT and load for both, so a ratio within a block
 * compares code, not processes (with a process per side, the same commit on both sides gave
 * medians of 0.87-1.13 over 511 blocks here). Per
 * scenario the median over blocks of head ÷ base must stay within the bound; a scenario over it is
 * measured again as long before the verdict. docs/performance.md, "The regression gate".
 */

const HARNESS = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..')
/** Every block measured, by scenario (written with --json). */
const BLOCKS: Record<string, GateBlock[]> = {}
const log = (line: string) => process.stderr.write(`[perf-gate] ${line}\n`)

/** The gate's options (command line, then environment). */
interface GateOptions {
  base?: string
  head: string
  headRev?: string
  bound: number
  seconds: number
  blockCpuMicros: number
  warmMs: number
  pg?: string
  json?: string
  requireBase: boolean
}

const USAGE = `usage: node scripts/perf-gate.mjs [--base REV] [--head DIR | --head-rev REV] [--bound 1.10] [--seconds 35]
                                [--block-cpu-us 10000] [--warm-ms 2500] [--pg URL] [--json FILE] [--require-base]
  base: --base, else $PGSCALE_GATE_BASE, else the merge base with origin/main (a branch), else HEAD^ (main's previous commit)
  head: the tree this script is in (or --head DIR, or a worktree of --head-rev REV)
  database: --pg URL or $PGSCALE_GATE_DATABASE_URL (two databases are created and dropped there), else a throwaway local cluster`

function options(argv: readonly string[]): GateOptions {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      base: { type: 'string' },
      head: { type: 'string' },
      'head-rev': { type: 'string' },
      bound: { type: 'string' },
      seconds: { type: 'string' },
      'block-cpu-us': { type: 'string' },
      'warm-ms': { type: 'string' },
      pg: { type: 'string' },
      json: { type: 'string' },
      'require-base': { type: 'boolean' },
      help: { type: 'boolean' },
    },
  })
  if (values.help) {
    console.log(USAGE)
    process.exit(0)
  }
  const number = (v: string | undefined, fallback: number, name: string) => {
    const n = v === undefined ? fallback : Number(v)
    if (!Number.isFinite(n) || n <= 0) throw new Error(`--${name} must be a positive number, got ${v}\n${USAGE}`)
    return n
  }
  return {
    base: values.base ?? (process.env.PGSCALE_GATE_BASE || undefined),
    head: resolve(values.head ?? HARNESS),
    ...(values['head-rev'] ? { headRev: values['head-rev'] } : {}),
    bound: number(values.bound ?? process.env.PGSCALE_GATE_BOUND, DEFAULT_GATE_BOUND, 'bound'),
    seconds: number(values.seconds, 35, 'seconds'),
    blockCpuMicros: number(values['block-cpu-us'], 10_000, 'block-cpu-us'),
    warmMs: number(values['warm-ms'], 2500, 'warm-ms'),
    pg: values.pg ?? (process.env.PGSCALE_GATE_DATABASE_URL || undefined),
    ...(values.json ? { json: values.json } : {}),
    requireBase: values['require-base'] ?? false,
  }
}

/** `git -C dir …`'s output, or undefined when it fails. */
function git(dir: string, ...args: string[]): string | undefined {
  try {
    return execFileSync('git', ['-C', dir, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim()
  } catch {
    return undefined
  }
}

/** The base commit: given, else the merge base with origin/main off main, else HEAD's first parent. Or why there is none. */
export function resolveBase(repo: string, given: string | undefined): { sha: string; how: string } | { skip: string } {
  const commit = (rev: string) => git(repo, 'rev-parse', '--verify', '--quiet', `${rev}^{commit}`)
  if (given) {
    const sha = commit(given)
    return sha ? { sha, how: `given (${given})` } : { skip: `the given base ${JSON.stringify(given)} is not a commit in this clone` }
  }
  const head = commit('HEAD')
  if (!head) return { skip: `${repo} is not a git checkout with a commit` }
  const main = commit('origin/main')
  if (main && main !== head) {
    const fork = git(repo, 'merge-base', 'HEAD', 'origin/main')
    if (fork && fork !== head) return { sha: fork, how: 'merge base of HEAD and origin/main' }
  }
  const parent = commit('HEAD^')
  if (parent) return { sha: parent, how: main === head ? "origin/main's previous commit (HEAD^)" : 'HEAD^' }
  const shallow = git(repo, 'rev-parse', '--is-shallow-repository') === 'true'
  return {
    skip: shallow
      ? 'HEAD has no parent in this shallow clone: fetch one more commit (git fetch --deepen=1) or set PGSCALE_GATE_BASE'
      : 'HEAD is the first commit: there is nothing to compare with (set PGSCALE_GATE_BASE)',
  }
}

/** A detached worktree of `rev` in a fresh temporary directory, node_modules linked to the harness's. */
function addWorktree(repo: string, rev: string, label: string): { dir: string; remove: () => void } {
  const parent = mkdtempSync(join(tmpdir(), `pgscale-gate-${label}-`))
  const dir = join(parent, 'tree')
  execFileSync('git', ['-C', repo, 'worktree', 'add', '--detach', '--quiet', dir, rev], { stdio: ['ignore', 'ignore', 'inherit'] })
  symlinkSync(join(HARNESS, 'node_modules'), join(dir, 'node_modules'), 'dir')
  return {
    dir,
    remove: () => {
      git(repo, 'worktree', 'remove', '--force', dir)
      rmSync(parent, { recursive: true, force: true })
      git(repo, 'worktree', 'prune')
    },
  }
}

/** One side: pgscale loaded from its tree, its scenarios prepared in its own database. */
interface Side {
  name: 'base' | 'head'
  scenarios: Map<string, GateScenario>
  close(): Promise<void>
  /** Calls made so far (each call gets the next query). */
  offset: number
}

/** Loads pgscale from `root` (through tsx) into this process and prepares the scenarios in `url`. */
async function loadSide(name: 'base' | 'head', root: string, url: string): Promise<Side> {
  const P = (await import(pathToFileURL(join(root, 'src', 'index.ts')).href)) as Pgscale
  const prepared = await prepareGate(P, url)
  return { name, scenarios: new Map(prepared.scenarios.map((s) => [s.name, s])), close: prepared.close, offset: 0 }
}

const cpuMicros = () => {
  const u = process.cpuUsage()
  return u.user + u.system
}

/** Two turns of the event loop: what the calls left queued (a pool's release, a socket's callbacks) runs now. */
const settle = async () => {
  for (let i = 0; i < 2; i++) await new Promise((resolve) => setImmediate(resolve))
}

/**
 * Runs `calls` calls of a scenario on one side: CPU µs and wall ms per call. The clock is read
 * after the loop settled, so the work a call leaves queued counts in its own block, not in the
 * other side's next one.
 */
async function block(side: Side, scenario: string, calls: number): Promise<{ cpu: number; wall: number }> {
  const s = side.scenarios.get(scenario)!
  await settle()
  const wall = performance.now()
  const cpu = cpuMicros()
  for (let i = 0; i < calls; i++) await s.run(side.offset++)
  await settle()
  return { cpu: (cpuMicros() - cpu) / calls, wall: (performance.now() - wall) / calls }
}

/** Runs `rounds` interleaved rounds of every scenario in `names`, adding each block to `blocks`. */
async function measure(
  sides: Record<'base' | 'head', Side>,
  names: readonly string[],
  calls: Record<string, Sizing>,
  rounds: number,
  blocks: Record<string, GateBlock[]>,
): Promise<void> {
  for (let r = 0; r < rounds; r++) {
    for (const [scenario, order] of roundOrder(names, (name) => blocks[name]!.length, Object.keys(blocks))) {
      const got: Partial<GateBlock> = {}
      for (const side of order) got[side] = (await block(sides[side], scenario, calls[scenario]!.calls)).cpu
      blocks[scenario]!.push(got as GateBlock)
    }
  }
}

/** How a scenario's blocks are cut: calls per block, and the wall time a block of both sides takes. */
interface Sizing {
  calls: number
  pairMs: number
}

/**
 * Warms both sides on every scenario (alternating, `ms` in all) and sizes its blocks: enough calls
 * for `cpuMicros` of CPU, from the slower side's figures. Short blocks: the two sides of one are
 * measured within milliseconds of each other and share the machine's load.
 */
async function warmUp(
  sides: Record<'base' | 'head', Side>,
  names: readonly string[],
  cpuMicros: number,
  ms: number,
): Promise<Record<string, Sizing>> {
  const sizing: Record<string, Sizing> = {}
  for (const scenario of names) {
    const last = { base: { cpu: 0, wall: 0 }, head: { cpu: 0, wall: 0 } }
    const started = performance.now()
    let calls = 5
    while (performance.now() - started < ms) {
      for (const side of ['base', 'head'] as const) last[side] = await block(sides[side], scenario, calls)
      calls = callsPerBlock(Math.max(last.base.cpu, last.head.cpu), cpuMicros)
    }
    sizing[scenario] = { calls, pairMs: 2 * calls * Math.max(last.base.wall, last.head.wall) }
  }
  return sizing
}

/**
 * The server: the given URL, else a throwaway local cluster (started by the base tree's pgscale: a
 * committed tree, whatever state the checkout is in); two fresh databases on it, one per side.
 */
async function databases(o: GateOptions, baseTree: string): Promise<{ urls: Record<'base' | 'head', string>; drop: () => Promise<void> }> {
  let server: Awaited<ReturnType<Pgscale['provision']>> | undefined
  if (!o.pg) {
    const P = (await import(pathToFileURL(join(baseTree, 'src', 'index.ts')).href)) as Pgscale
    server = await P.provision({ provider: 'local' })
    log(`a throwaway local cluster: PostgreSQL ${server.info.serverVersion}, pgvector ${server.info.pgvectorVersion}`)
  }
  const url = o.pg ?? server!.url!
  const admin = new pg.Client({ connectionString: url })
  await admin.connect()
  const suffix = `${process.pid}_${Date.now().toString(36)}`
  const names = { base: `pgscale_gate_base_${suffix}`, head: `pgscale_gate_head_${suffix}` }
  const urls = { base: url, head: url }
  for (const side of ['base', 'head'] as const) {
    await admin.query(`create database ${names[side]}`)
    const u = new URL(url)
    u.pathname = `/${names[side]}`
    urls[side] = u.toString()
  }
  return {
    urls,
    drop: async () => {
      for (const name of Object.values(names)) await admin.query(`drop database if exists ${name} with (force)`).catch(() => {})
      await admin.end()
      await server?.stop()
    },
  }
}

/** The trees compared: the base's worktree, the head's (the checkout, a given tree, or a worktree of a revision). */
function trees(o: GateOptions, base: { sha: string }): { base: string; head: string; remove: () => void } {
  const removers: Array<() => void> = []
  const baseTree = addWorktree(o.head, base.sha, 'base')
  removers.push(baseTree.remove)
  let head = o.head
  if (o.headRev) {
    const headTree = addWorktree(o.head, o.headRev, 'head')
    removers.push(headTree.remove)
    head = headTree.dir
  } else if (!existsSync(join(head, 'node_modules'))) {
    symlinkSync(join(HARNESS, 'node_modules'), join(head, 'node_modules'), 'dir')
  }
  return { base: baseTree.dir, head, remove: () => removers.forEach((r) => r()) }
}

/** The scenarios both sides have; one the base lacks (or the head) is left out, said so. */
function common(sides: Record<'base' | 'head', Side>): string[] {
  for (const name of sides.head.scenarios.keys()) if (!sides.base.scenarios.has(name)) log(`${name}: not on the base side — not compared`)
  return [...sides.head.scenarios.keys()].filter((name) => sides.base.scenarios.has(name))
}

/** Measures, confirms failures once with as many blocks again; the summaries. */
async function compare(o: GateOptions, sides: Record<'base' | 'head', Side>, names: readonly string[]): Promise<GateSummary[]> {
  const calls = await warmUp(sides, names, o.blockCpuMicros, o.warmMs)
  const perRound = names.reduce((sum, n) => sum + calls[n]!.pairMs, 0)
  const rounds = Math.max(15, Math.min(5000, Math.floor((o.seconds * 1000) / perRound)))
  log(`${rounds} interleaved rounds; calls per block: ${names.map((n) => `${n} ${calls[n]!.calls}`).join(', ')}`)
  for (const n of names) BLOCKS[n] = []
  await measure(sides, names, calls, rounds, BLOCKS)
  let summaries = names.map((n) => summarizeScenario(n, BLOCKS[n]!, o.bound))
  const failing = summaries.filter((s) => !s.pass).map((s) => s.scenario)
  if (failing.length) {
    log(`over the bound on the first pass: ${failing.join(', ')} — measuring those ${rounds} rounds more before the verdict`)
    log(`first pass:\n${renderGate(summaries)}`)
    await measure(sides, failing, calls, rounds, BLOCKS)
    summaries = names.map((n) => summarizeScenario(n, BLOCKS[n]!, o.bound))
  }
  return summaries
}

/** Prints the verdict: the table, what each scenario calls, the failures; writes --json. */
function report(
  o: GateOptions,
  shas: { base: string; head: string },
  sides: Record<'base' | 'head', Side>,
  summaries: GateSummary[],
  seconds: number,
) {
  console.log(
    `perf gate: head ${shas.head.slice(0, 10)} vs base ${shas.base.slice(0, 10)} — CPU time of this Node process per call (process.cpuUsage), ` +
      `base and head in alternating blocks; median of the per-block ratios head/base; fails above ${o.bound.toFixed(2)}`,
  )
  console.log(renderGate(summaries))
  for (const s of sides.head.scenarios.values()) console.log(`  ${s.name}: ${s.what}`)
  if (o.json) writeFileSync(o.json, JSON.stringify({ ...shas, bound: o.bound, summaries, blocks: BLOCKS }, null, 2) + '\n')
  const failed = failures(summaries)
  console.log(failed.length ? `perf gate: FAILED\n  ${failed.join('\n  ')}` : `perf gate: passed (${seconds.toFixed(0)} s)`)
}

/** Runs the gate; resolves to its exit status (0 pass or skipped, 1 a regression, 2 the gate could not run). */
export async function runGate(argv: readonly string[]): Promise<number> {
  const started = performance.now()
  const elapsed = () => (performance.now() - started) / 1000
  const o = options(argv)
  const base = resolveBase(o.head, o.base)
  if ('skip' in base) {
    log(`SKIPPED: no base commit to compare with — ${base.skip}`)
    return o.requireBase ? 2 : 0
  }
  const headSha = git(o.head, 'rev-parse', o.headRev ?? 'HEAD') ?? '?'
  log(`base ${base.sha.slice(0, 10)} (${base.how}); head ${o.headRev ? `${o.headRev} ` : ''}${headSha.slice(0, 10)} at ${o.head}`)
  const tree = trees(o, base)
  let db: Awaited<ReturnType<typeof databases>> | undefined
  const loaded: Side[] = []
  try {
    db = await databases(o, tree.base)
    log(`databases ready at ${elapsed().toFixed(1)} s`)
    for (const name of ['base', 'head'] as const) loaded.push(await loadSide(name, tree[name], db.urls[name]))
    const sides = { base: loaded[0]!, head: loaded[1]! }
    log(`set up at ${elapsed().toFixed(1)} s; measuring for about ${o.seconds} s, bound ${o.bound.toFixed(2)}`)
    const summaries = await compare(o, sides, common(sides))
    report(o, { base: base.sha, head: headSha }, sides, summaries, elapsed())
    return gateExitCode(summaries)
  } finally {
    for (const side of loaded) await side.close().catch(() => {})
    await db?.drop()
    tree.remove()
    log(`done in ${elapsed().toFixed(0)} s`)
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  runGate(process.argv.slice(2)).then(
    (code) => (process.exitCode = code),
    (err: unknown) => {
      log(`the gate could not run: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`)
      process.exitCode = 2
    },
  )
}
