import { appendFileSync } from 'node:fs'
import type { Reporter, TestCase, TestModule, Vitest } from 'vitest/node'

const REASON_IN_NAME = /(?: — skipped: | ?skipped — )(.+)$/

/** Why a skipped test did not run: the note of `ctx.skip(note)`, or `— skipped: reason` in its name or a suite's. */
function skipReason(test: TestCase): string | undefined {
  const result = test.result()
  if (result.state === 'skipped' && result.note) return result.note
  for (let node: { name: string; parent?: unknown } | undefined = test; node && 'name' in node; node = node.parent as typeof node) {
    const match = REASON_IN_NAME.exec(node.name)
    if (match) return match[1]
  }
  return undefined
}

/**
 * Ends a run with the skips grouped by reason and one plain line, `tests: N passed, N failed,
 * N skipped`, that CI and people can read; with `PGSCALE_TEST_SUMMARY_FILE` set it also appends
 * the counts there (CI adds up runs). Every skip says why: a run of the whole suite (no name
 * filter) in which a test was skipped without a reason fails, each such test counted as failed.
 */
export default class SummaryReporter implements Reporter {
  #filtered = false

  onInit(vitest: Vitest): void {
    this.#filtered = Boolean(vitest.config.testNamePattern)
  }

  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    const counts = { passed: 0, failed: 0, skipped: 0 }
    const reasons = new Map<string, number>()
    const unexplained: string[] = []
    for (const module of modules) {
      for (const test of module.children.allTests()) {
        const state = test.result().state
        if (state === 'passed') counts.passed++
        else if (state === 'failed') counts.failed++
        else {
          counts.skipped++
          const reason = skipReason(test)
          if (reason) reasons.set(reason, (reasons.get(reason) ?? 0) + 1)
          else unexplained.push(`${module.moduleId.replace(/^.*\/test\//, 'test/')} > ${test.fullName}`)
        }
      }
      if (module.state() === 'failed' && [...module.children.allTests()].length === 0) counts.failed++
    }
    if (reasons.size) {
      console.log('\nskipped, by reason:')
      for (const [reason, n] of [...reasons].sort((a, b) => b[1] - a[1])) console.log(`  ${String(n).padStart(4)}  ${reason}`)
    }
    if (unexplained.length && !this.#filtered) {
      console.log(
        `\n${unexplained.length} test(s) skipped without a reason (use itUnless, describeUnless or skipBecause from test/support/skip.ts):`,
      )
      for (const name of unexplained) console.log(`  ${name}`)
      counts.skipped -= unexplained.length
      counts.failed += unexplained.length
      process.exitCode = 1
    }
    console.log(`\ntests: ${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped`)
    const file = process.env.PGSCALE_TEST_SUMMARY_FILE
    if (file) appendFileSync(file, `${counts.passed} ${counts.failed} ${counts.skipped}\n`)
  }
}
