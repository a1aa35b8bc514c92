import pg from 'pg'

/**
 * A pg.Pool whose clients count the queries they send: what "one round trip" tests read. Every
 * `client.query` call is one message on the wire (node-postgres sends each call as one).
 *
 * ### Examples
 * ```ts
 * const counted = countingPool({ connectionString: url, max: 1 })
 * counted.reset(); await store.forTenant('a').search(q); expect(counted.queries).toBe(1)
 * ```
 */
export function countingPool(config: pg.PoolConfig): { pool: pg.Pool; readonly queries: number; reset(): void } {
  const pool = new pg.Pool(config)
  pool.on('error', () => {})
  let queries = 0
  pool.on('connect', (client) => {
    const query = client.query.bind(client) as (...args: unknown[]) => unknown
    ;(client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
      queries++
      return query(...args)
    }
  })
  return {
    pool,
    get queries() {
      return queries
    },
    reset() {
      queries = 0
    },
  }
}
