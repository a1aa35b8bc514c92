/** A progress line for long phases: redrawn in place on a TTY, silent elsewhere (CI logs, `--json -`). */
export interface Progress {
  /** Sets the done count (of `total`) and redraws at most ~10 times a second. */
  update(done: number, note?: string): void
  /** Adds `by` (default 1) to the done count. */
  advance(by?: number): void
  /** Ends the line with a summary. */
  done(summary: string): void
}

/**
 * Starts a progress line on stderr.
 *
 * ### Examples
 * ```ts
 * const bar = progress('seeding', 3_000_000, { enabled: process.stderr.isTTY })
 * bar.update(150_000); bar.done('3,000,000 rows in 24 s')
 * ```
 */
export function progress(label: string, total: number, options: { enabled: boolean }): Progress {
  const started = performance.now()
  let last = 0
  let count = 0
  const width = 28
  const draw = (done: number, note = '') => {
    const fraction = total > 0 ? Math.min(1, done / total) : 0
    const filled = Math.round(fraction * width)
    const seconds = (performance.now() - started) / 1000
    const rate = seconds > 0 ? Math.round(done / seconds).toLocaleString('en-US') : '0'
    process.stderr.write(
      `\r${label.padEnd(24)} [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${(fraction * 100).toFixed(0).padStart(3)}%  ${rate}/s ${note}`.padEnd(
        100,
      ),
    )
  }
  return {
    update(done, note) {
      count = done
      if (!options.enabled) return
      const now = performance.now()
      if (now - last < 100 && done < total) return
      last = now
      draw(done, note)
    },
    advance(by = 1) {
      this.update(count + by)
    },
    done(summary) {
      if (!options.enabled) return
      process.stderr.write(`\r${`${label.padEnd(24)} ${summary}`.padEnd(100)}\n`)
    },
  }
}
