/**
 * A progress line for long phases: redrawn in place on a TTY; piped (a CI log, a file), a plain
 * line at least every {@link PIPED_EVERY_MS} — phase, done/total, rate, ETA — so a run is never
 * silent for long.
 */
export interface Progress {
  /** Sets the done count (of `total`) and redraws at most ~10 times a second. */
  update(done: number, note?: string): void
  /** Adds `by` (default 1) to the done count. */
  advance(by?: number): void
  /** Changes the total (work found as it goes: indexes a planner decides on). */
  setTotal(total: number): void
  /** Ends the line with a summary. */
  done(summary: string): void
}

/** Piped, a progress or heartbeat line at least this often (the issue's bound is 10 s). */
export const PIPED_EVERY_MS = 8000

// When any bench line last went out piped: a heartbeat stays quiet while a bar speaks.
let lastPipedLine = performance.now()

function pipedLine(line: string): void {
  lastPipedLine = performance.now()
  process.stderr.write(`${line}\n`)
}

const seconds = (ms: number) => `${Math.round(ms / 1000)} s`

/**
 * What a progress line says: `label: done/total (pct), rate/s, ETA`.
 *
 * ### Examples
 * ```ts
 * progressText('ingest', 500, 1000, 10_000) // 'ingest: 500/1,000 (50%), 50/s, ETA 10 s'
 * ```
 */
export function progressText(label: string, done: number, total: number, elapsedMs: number, note = ''): string {
  const rate = elapsedMs > 0 ? done / (elapsedMs / 1000) : 0
  const pct = total > 0 ? Math.min(100, (100 * done) / total) : 0
  const eta = rate > 0 && total > done ? `, ETA ${seconds(((total - done) / rate) * 1000)}` : ''
  const n = (x: number) => Math.round(x).toLocaleString('en-US')
  return `${label}: ${n(done)}/${n(total)} (${pct.toFixed(0)}%), ${rate >= 10 ? n(rate) : rate.toFixed(1)}/s${eta}${note ? ` — ${note}` : ''}`
}

/**
 * Starts a progress line on stderr: `enabled` (a TTY) redraws one line in place; otherwise a plain
 * line every {@link PIPED_EVERY_MS} while the phase runs, and its summary at the end. `piped: false`
 * silences those too.
 *
 * ### Examples
 * ```ts
 * const bar = progress('seeding', 3_000_000, { enabled: process.stderr.isTTY })
 * bar.update(150_000); bar.done('3,000,000 rows in 24 s')
 * ```
 */
export function progress(label: string, total: number, options: { enabled: boolean; piped?: boolean; everyMs?: number }): Progress {
  const started = performance.now()
  const piped = !options.enabled && options.piped !== false
  let last = 0
  let count = 0
  let note = ''
  const width = 28
  const draw = (done: number) => {
    const fraction = total > 0 ? Math.min(1, done / total) : 0
    const filled = Math.round(fraction * width)
    const secs = (performance.now() - started) / 1000
    const rate = secs > 0 ? Math.round(done / secs).toLocaleString('en-US') : '0'
    process.stderr.write(
      `\r${label.padEnd(24)} [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${(fraction * 100).toFixed(0).padStart(3)}%  ${rate}/s ${note}`.padEnd(
        100,
      ),
    )
  }
  const every = options.everyMs ?? PIPED_EVERY_MS
  const timer = piped
    ? setInterval(() => pipedLine(progressText(label, count, total, performance.now() - started, note)), every)
    : undefined
  timer?.unref()
  return {
    update(done, text) {
      count = done
      total = Math.max(total, done)
      note = text ?? note
      if (!options.enabled) return
      const now = performance.now()
      if (now - last < 100 && done < total) return
      last = now
      draw(done)
    },
    advance(by = 1) {
      this.update(count + by)
    },
    setTotal(n) {
      total = n
    },
    done(summary) {
      clearInterval(timer)
      if (options.enabled) process.stderr.write(`\r${`${label.padEnd(24)} ${summary}`.padEnd(100)}\n`)
      else if (piped && performance.now() - started >= every) pipedLine(`${label}: ${summary}`)
    },
  }
}

/**
 * Piped, says a phase is still running when nothing else was printed for {@link PIPED_EVERY_MS}
 * (`rag-bench: search, 24 s`): phases without a bar of their own are never silent. On a TTY (the
 * bars redraw) or with `enabled: false` it prints nothing. Call the returned function when the
 * phase ends.
 *
 * ### Examples
 * ```ts
 * const stop = heartbeat('rag-bench: writes', { enabled: !process.stderr.isTTY })
 * try { await writesPhase(run) } finally { stop() }
 * ```
 */
export function heartbeat(label: string, options: { enabled: boolean; everyMs?: number }): () => void {
  if (!options.enabled) return () => {}
  const started = performance.now()
  const every = options.everyMs ?? PIPED_EVERY_MS
  const timer = setInterval(() => {
    if (performance.now() - Math.max(lastPipedLine, started) >= every * 0.95)
      pipedLine(`${label}, ${seconds(performance.now() - started)} so far`)
  }, every / 4)
  timer.unref()
  return () => clearInterval(timer)
}
