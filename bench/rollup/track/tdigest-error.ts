import { sql, type Kysely } from 'kysely'
import { median, percentile } from '../../report/stats.js'

/** One compression's error: |estimate − exact| / the bucket's value range, over buckets × percentiles, and the digest's size. */
export interface TdigestErrorRow {
  compression: number
  level: 'group' | 'tenant' | 'fleet'
  estimates: number
  p50: number
  p95: number
  max: number
  /** Mean stored size of one digest at this level, bytes. */
  bytes: number
}

/**
 * The error of `approxPercentiles` at each compression, measured on the server: `rows` long-tailed
 * values (exponential body, a heavy power tail; `setseed` for the same rows every run) of `tenants`
 * tenants × `groups` groups; a digest per tenant and group (what a rollup bucket holds), merged per
 * tenant (`read({ groupBy: [] })`) and over the fleet (a fleet level), each level's `percentiles`
 * against `percentile_cont` of the same rows, divided by that level's value range (max − min).
 *
 * ### Examples
 * ```ts
 * const rows = await measureTdigestError(db, { rows: 200_000, tenants: 100, groups: 10, compressions: [25, 100, 400], percentiles: [0.5, 0.95] })
 * ```
 */
export async function measureTdigestError(
  db: Kysely<any>,
  o: { rows: number; tenants: number; groups: number; compressions: readonly number[]; percentiles: readonly number[] },
): Promise<TdigestErrorRow[]> {
  await sql`drop table if exists pgscale_td_rows`.execute(db)
  await sql`create table pgscale_td_rows as
    select 1 + i % ${o.tenants} as tenant, (i / ${o.tenants}) % ${o.groups} as g,
      -ln(1 - r1) * 50 + power(r2, 8) * 5000 as v
    from (select i, random() as r1, random() as r2 from (select setseed(0.42)) s, generate_series(1, ${o.rows}) as i) x`.execute(db)
  const out: TdigestErrorRow[] = []
  try {
    for (const c of o.compressions) {
      await sql`drop table if exists pgscale_td_digests`.execute(db)
      await sql`create table pgscale_td_digests as select tenant, g, tdigest(v, ${sql.lit(c)}) as d from pgscale_td_rows group by 1, 2`.execute(
        db,
      )
      out.push(await level(db, c, 'group', sql`tenant, g`, o.percentiles))
      out.push(await level(db, c, 'tenant', sql`tenant`, o.percentiles))
      out.push(await level(db, c, 'fleet', sql`1`, o.percentiles))
    }
  } finally {
    await sql`drop table if exists pgscale_td_digests; drop table if exists pgscale_td_rows`.execute(db)
  }
  return out
}

async function level(
  db: Kysely<any>,
  compression: number,
  name: TdigestErrorRow['level'],
  keys: ReturnType<typeof sql>,
  percentiles: readonly number[],
) {
  const asked = sql`${[...percentiles]}::double precision[]`
  const { rows } = await sql<{ err: number[]; bytes: number }>`
    with est as (
      select (${keys})::text as k, tdigest_percentile(d, ${asked}) as p, pg_column_size(tdigest(d)) as bytes
      from pgscale_td_digests group by ${keys}
    ), exact as (
      select (${keys})::text as k, percentile_cont(${asked}) within group (order by v) as p, max(v) - min(v) as range
      from pgscale_td_rows group by ${keys}
    )
    select array(select abs(e.p[i] - x.p[i]) / nullif(x.range, 0) from generate_subscripts(e.p, 1) as i) as err, e.bytes
    from est e join exact x on x.k = e.k`.execute(db)
  const errors = rows.flatMap((r) => r.err.filter((e) => e !== null))
  return {
    compression,
    level: name,
    estimates: errors.length,
    p50: median(errors),
    p95: percentile(errors, 95),
    max: Math.max(...errors),
    bytes: rows.reduce((s, r) => s + r.bytes, 0) / rows.length,
  }
}
