const cleanups = new Set<() => void>()
const SIGNALS = { SIGINT: 2, SIGTERM: 15 } as const

function runCleanups(): void {
  for (const cleanup of cleanups) {
    try {
      cleanup()
    } catch {
      // One failed cleanup must not stop the others.
    }
  }
}

/**
 * Listeners that only re-raise the signal when they are alone — signal-exit 3 and 4, which
 * Testcontainers' dependencies install — are not a host app's shutdown. Counted as one, they and
 * pgscale's handler would each wait for the other, and Ctrl-C would do nothing.
 */
function relaysOnly(listener: (...args: unknown[]) => unknown): boolean {
  const source = Function.prototype.toString.call(listener)
  return source.includes('processOk(') || source.includes('this.#emitter')
}

/**
 * On SIGINT/SIGTERM with no listener of the host app's, the process would die without running
 * 'exit' hooks: exit as the signal would (130/143), which runs them. When the host app listens for
 * the signal itself, step aside: its graceful shutdown still has the database, and calls `stop()`
 * (or exits, and the 'exit' hook cleans up).
 */
const signalHandlers: Record<string, () => void> = {}
for (const [signal, number] of Object.entries(SIGNALS)) {
  signalHandlers[signal] = () => {
    const own = signalHandlers[signal]
    const host = process.listeners(signal as NodeJS.Signals).filter((l) => l !== own && !relaysOnly(l as (...args: unknown[]) => unknown))
    if (host.length > 0) return
    process.exit(128 + number)
  }
}

/**
 * Runs `cleanup` (synchronous: it runs in the 'exit' hook) when the process exits, unless the
 * returned function is called first (after a normal `stop()`). The exit and signal hooks are
 * installed while any cleanup is registered and removed with the last one.
 *
 * ### Examples
 * ```ts
 * const unregister = registerExitCleanup(() => child.kill('SIGQUIT'))
 * await stop(); unregister()
 * ```
 */
export function registerExitCleanup(cleanup: () => void): () => void {
  const wrapped = () => cleanup()
  if (cleanups.size === 0) {
    process.on('exit', runCleanups)
    for (const [signal, handler] of Object.entries(signalHandlers)) process.on(signal, handler)
  }
  cleanups.add(wrapped)
  return () => {
    if (!cleanups.delete(wrapped) || cleanups.size > 0) return
    process.off('exit', runCleanups)
    for (const [signal, handler] of Object.entries(signalHandlers)) process.off(signal, handler)
  }
}
