import { appendFileSync } from 'node:fs'
import type { Reporter, TestModule } from 'vitest/node'

/**
 * Ends a run with one plain line, `tests: N passed, N failed, N skipped`, that CI and people can
 * read; with `PGSCALE_TEST_SUMMARY_FILE` set it also appends the counts there (CI adds up runs).
 */
export default class SummaryReporter implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    const counts = { passed: 0, failed: 0, skipped: 0 }
    for (const module of modules) {
      for (const test of module.children.allTests()) {
        const state = test.result().state
        if (state === 'passed') counts.passed++
        else if (state === 'failed') counts.failed++
        else counts.skipped++
      }
      if (module.state() === 'failed' && [...module.children.allTests()].length === 0) counts.failed++
    }
    console.log(`\ntests: ${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped`)
    const file = process.env.PGSCALE_TEST_SUMMARY_FILE
    if (file) appendFileSync(file, `${counts.passed} ${counts.failed} ${counts.skipped}\n`)
  }
}
