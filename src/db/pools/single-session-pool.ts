import type { Capabilities, Session, SessionPool } from './session.js'

/**
 * A {@link SessionPool} of exactly one session (PGlite's connection, an app's open transaction),
 * handed to one caller at a time: a caller that acquires while another holds it waits its turn.
 *
 * ### Examples
 * ```ts
 * const pool = singleSessionPool(session, { concurrentConnections: false, maxConnections: 1, copy: 'buffered' }, () => pglite.close())
 * ```
 */
export function singleSessionPool(
  session: Session,
  capabilities: Capabilities,
  close: () => Promise<void>,
  options: { joinsTransaction?: boolean } = {},
): SessionPool {
  let tail: Promise<void> = Promise.resolve()
  let releaseCurrent: (() => void) | undefined
  return {
    capabilities,
    joinsTransaction: options.joinsTransaction,
    async acquire() {
      const previous = tail
      let release!: () => void
      tail = new Promise<void>((resolve) => (release = resolve))
      await previous
      releaseCurrent = release
      return session
    },
    release() {
      const release = releaseCurrent
      releaseCurrent = undefined
      release?.()
    },
    close,
  }
}
