import pg from 'pg'

/**
 * A pg.Pool whose clients count the queries they send: what "one round trip" tests read. Every
 * `client.query` call is one message on the wire (node-postgres sends each call as one).
 *
 * ### Examples
 * ```ts
 * const counted = countingPool({ connectionString: url, max: 1 })
 * counted.reset(); await store.forTenant('a').search(q); expect(counted.queries).toBe(1)
 * expect(counted.texts[0]).toContain('SET LOCAL')
 * ```
 */
export function countingPool(config: pg.PoolConfig): {
  pool: pg.Pool
  readonly queries: number
  readonly texts: readonly string[]
  reset(): void
} {
  const pool = new pg.Pool(config)
  pool.on('error', () => {})
  let queries = 0
  let texts: string[] = []
  pool.on('connect', (client) => {
    const query = client.query.bind(client) as (...args: unknown[]) => unknown
    ;(client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
      queries++
      const first = args[0] as string | { text?: string }
      texts.push(typeof first === 'string' ? first : (first?.text ?? ''))
      return query(...args)
    }
  })
  return {
    pool,
    get queries() {
      return queries
    },
    /** The text of each query since the last reset. */
    get texts() {
      return texts
    },
    reset() {
      queries = 0
      texts = []
    },
  }
}
