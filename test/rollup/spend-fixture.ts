import { sql, type Kysely } from 'kysely'

/**
 * The `spend` source the fleet and per-tenant level tests share: `name` (default `spend`) with its
 * `(tenant_id, paid_at)` index and 600 seeded rows of tenants 1-5 over 2025 (categories a/b/c and
 * null, channels web/shop, some null amounts), the tenant column of `tenantType`.
 *
 * ### Examples
 * ```ts
 * beforeAll(() => createSpend(t.db))
 * await insertSpend(t.db, 2, '2025-03-31T23:30:00Z', 'a', '12.34')
 * ```
 */
export async function createSpend(db: Kysely<any>, name = 'spend', tenantType = 'bigint'): Promise<void> {
  await sql`create table ${sql.table(name)} (id bigserial primary key, tenant_id ${sql.raw(tenantType)} not null, paid_at timestamptz not null,
    category text, channel text, amount numeric(10,2))`.execute(db)
  await sql`create index on ${sql.table(name)} (tenant_id, paid_at)`.execute(db)
  await sql`insert into ${sql.table(name)} (tenant_id, paid_at, category, channel, amount)
    select (1 + i % 5)::text::${sql.raw(tenantType)}, timestamptz '2025-01-01 00:00+00' + (i * 7 % 330) * interval '1 day' + (i % 24) * interval '1 hour',
      case when i % 11 = 0 then null else (array['a', 'b', 'c'])[1 + i % 3] end, (array['web', 'shop'])[1 + i % 2],
      case when i % 13 = 0 then null else (i % 97) - 10 end
    from generate_series(1, 600) as g(i)`.execute(db)
}

/** One row into `spend`: what the tests' writes add before a refresh. */
export async function insertSpend(
  db: Kysely<any>,
  tenant: number,
  at: string,
  category: string | null,
  amount: string | null,
  channel = 'web',
): Promise<void> {
  await sql`insert into spend (tenant_id, paid_at, category, channel, amount) values (${tenant}, ${at}::timestamptz, ${category}, ${channel}, ${amount}::numeric)`.execute(
    db,
  )
}
