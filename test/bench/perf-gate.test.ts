import { execFileSync } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import {
  blockRatios,
  callsPerBlock,
  DEFAULT_GATE_BOUND,
  failures,
  gateExitCode,
  renderGate,
  roundOrder,
  summarizeScenario,
} from '../../bench/perf-gate/gate-stats.js'
import { resolveBase } from '../../bench/perf-gate/run-gate.js'
import { removeTempDirs, tempDir } from '../support/temp-dir.js'

afterAll(removeTempDirs)

/** The regression gate's statistics and verdict on given numbers (no timing is measured here). */
describe('perf gate statistics', () => {
  it('a block ratio is head ÷ base; blocks whose clock did not move are dropped', () => {
    expect(
      blockRatios([
        { base: 100, head: 110 },
        { base: 0, head: 5 },
        { base: 50, head: Number.NaN },
        { base: 200, head: 100 },
      ]),
    ).toEqual([1.1, 0.5])
  })

  it('the verdict is the median of the block ratios: one wild block neither fails nor passes a scenario', () => {
    const blocks = [
      { base: 100, head: 104 },
      { base: 100, head: 300 }, // a block the machine's load hit on the head side only
      { base: 100, head: 101 },
      { base: 100, head: 98 },
      { base: 400, head: 103 }, // and one it hit on the base side
    ]
    const s = summarizeScenario('search', blocks, 1.1)
    expect(s.ratio).toBeCloseTo(1.01, 10)
    expect(s.pass).toBe(true)
    expect(s.blocks).toBe(5)
    expect(s.baseMicros).toBe(100)
    expect(s.headMicros).toBe(103)
  })

  it('a 20% slowdown in most blocks fails at the default bound; 5% passes', () => {
    const slow = Array.from({ length: 9 }, (_, i) => ({ base: 500 + i, head: (500 + i) * (i === 4 ? 0.9 : 1.2) }))
    const fine = Array.from({ length: 9 }, (_, i) => ({ base: 500 + i, head: (500 + i) * 1.05 }))
    expect(DEFAULT_GATE_BOUND).toBe(1.1)
    const failed = summarizeScenario('search', slow)
    expect(failed.ratio).toBeCloseTo(1.2, 10)
    expect(failed.pass).toBe(false)
    expect(summarizeScenario('refreshAt', fine).pass).toBe(true)
    expect(gateExitCode([failed, summarizeScenario('refreshAt', fine)])).toBe(1)
    expect(gateExitCode([summarizeScenario('refreshAt', fine)])).toBe(0)
    expect(failures([failed])).toEqual(["search: head costs 1.200× the base's CPU per call (median of 9 blocks), over the bound 1.10"])
  })

  it('exactly at the bound passes; above it fails', () => {
    expect(summarizeScenario('s', [{ base: 100, head: 110 }], 1.1).pass).toBe(true)
    expect(summarizeScenario('s', [{ base: 100, head: 110.5 }], 1.1).pass).toBe(false)
  })

  it('no usable block is not a pass, and no scenario at all fails the gate', () => {
    const empty = summarizeScenario('route', [{ base: 0, head: 0 }])
    expect(empty.pass).toBe(false)
    expect(failures([empty])).toEqual(['route: no usable block'])
    expect(gateExitCode([])).toBe(1)
  })

  it('refuses a bound that is not above 1', () => {
    expect(() => summarizeScenario('s', [{ base: 1, head: 1 }], 1)).toThrow(RangeError)
    expect(() => summarizeScenario('s', [{ base: 1, head: 1 }], 0.9)).toThrow(RangeError)
  })

  it('the quartiles describe the spread of the block ratios', () => {
    const s = summarizeScenario(
      's',
      [0.8, 0.9, 1, 1.1, 1.2, 1.3, 1.4, 1.5].map((r) => ({ base: 100, head: 100 * r })),
    )
    expect(s.ratioP25).toBeCloseTo(0.9, 10)
    expect(s.ratioP75).toBeCloseTo(1.3, 10)
  })

  it("each side runs first in half of every scenario's blocks, over rounds and a second pass", () => {
    const names = ['search', 'search.filtered', 'refreshAt', 'replicas.route']
    const blocks: Record<string, string[]> = Object.fromEntries(names.map((n) => [n, []]))
    const pass = (which: readonly string[], rounds: number) => {
      for (let r = 0; r < rounds; r++) {
        for (const [name, order] of roundOrder(which, (n) => blocks[n]!.length, names)) blocks[name]!.push(order[0])
      }
    }
    pass(names, 7)
    pass(['search.filtered', 'replicas.route'], 7)
    for (const name of names) {
      const first = blocks[name]!
      // Alternating block by block: never the same side first twice in a row.
      for (let i = 1; i < first.length; i++) expect(first[i], `${name} block ${i}`).not.toBe(first[i - 1])
      const baseFirst = first.filter((s) => s === 'base').length
      expect(Math.abs(2 * baseFirst - first.length), name).toBeLessThanOrEqual(1)
    }
    // Shifted between scenarios: in one round, neighbours start with different sides.
    expect(roundOrder(names, () => 0).map(([, order]) => order[0])).toEqual(['base', 'head', 'base', 'head'])
  })

  it('blocks are sized from the cost per call, within bounds', () => {
    expect(callsPerBlock(500, 10_000)).toBe(20)
    expect(callsPerBlock(2, 10_000)).toBe(5000)
    expect(callsPerBlock(50_000, 10_000)).toBe(5)
    expect(callsPerBlock(0, 10_000)).toBe(5000)
  })

  it('the table names every scenario with both sides, the ratio and the verdict', () => {
    const table = renderGate([
      summarizeScenario('search', [{ base: 500, head: 600 }]),
      summarizeScenario('refreshAt', [{ base: 400, head: 404 }]),
    ])
    const [header, , search, refresh] = table.split('\n')
    expect(header).toMatch(/scenario +base µs\/call +head µs\/call +head\/base \(median\)/)
    expect(search).toMatch(/^search +500\.0 +600\.0 +1\.200× .* FAIL$/)
    expect(refresh).toMatch(/^refreshAt +400\.0 +404\.0 +1\.010× .* ok$/)
  })
})

describe('perf gate base commit', () => {
  const git = (dir: string, ...args: string[]) =>
    execFileSync('git', ['-C', dir, ...args], {
      encoding: 'utf8',
      env: { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@t', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@t' },
    }).trim()
  const commit = (dir: string, n: number) => {
    writeFileSync(join(dir, 'f'), String(n))
    git(dir, 'add', 'f')
    git(dir, 'commit', '-q', '-m', `c${n}`)
    return git(dir, 'rev-parse', 'HEAD')
  }

  it('is HEAD^ on main, a given revision when asked, and a skip with the reason when there is none', () => {
    const dir = tempDir('pgscale-gate-git-')
    git(dir, 'init', '-q')
    const first = commit(dir, 1)
    expect(resolveBase(dir, undefined)).toEqual({ skip: expect.stringMatching(/first commit.*PGSCALE_GATE_BASE/) })
    const second = commit(dir, 2)
    expect(resolveBase(dir, undefined)).toEqual({ sha: first, how: 'HEAD^' })
    expect(resolveBase(dir, 'HEAD')).toEqual({ sha: second, how: 'given (HEAD)' })
    expect(resolveBase(dir, 'no-such-rev')).toEqual({ skip: expect.stringMatching(/not a commit/) })
  })

  it('says why when the directory is no git checkout', () => {
    expect(resolveBase(tempDir('pgscale-gate-nogit-'), undefined)).toEqual({ skip: expect.stringMatching(/not a git checkout/) })
  })
})
