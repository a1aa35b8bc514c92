import { sql } from 'kysely'
import { connect } from '../../src/index.js'

/** Where a Citus node listens, as the coordinator's metadata records it. */
interface NodeAddress {
  host: string
  port: number
}

/** A URL for `database` on the node at `address`, with the coordinator URL's credentials. */
function nodeUrl(coordinatorUrl: string, address: NodeAddress, database: string): string {
  const u = new URL(coordinatorUrl)
  u.hostname = address.host
  u.port = String(address.port)
  u.pathname = `/${database}`
  return u.toString()
}

/**
 * Creates database `name` as a Citus cluster of its own: the database on the coordinator and on
 * every worker of the coordinator's metadata, `citus` and `vector` in each, the nodes' credentials
 * (the coordinator URL's password) and the workers registered in the new coordinator database.
 * Citus keeps its metadata per database, so a plain `CREATE DATABASE` would be a database without
 * workers. Returns the function that drops it everywhere.
 *
 * ### Examples
 * ```ts
 * const drop = await createCitusDatabase(coordinatorUrl, 'pgscale_test_ab12')
 * ```
 */
export async function createCitusDatabase(coordinatorUrl: string, name: string): Promise<() => Promise<void>> {
  const admin = await connect(coordinatorUrl, { maxConnections: 1, requireVector: false })
  const password = decodeURIComponent(new URL(coordinatorUrl).password)
  const coordinator = { host: new URL(coordinatorUrl).hostname, port: Number(new URL(coordinatorUrl).port || 5432) }
  const { rows: workers } = await sql<NodeAddress>`
    select nodename as host, nodeport as port from pg_dist_node
    where noderole = 'primary' and isactive and groupid <> 0 order by nodeid`.execute(admin)
  const { rows: coord } = await sql<NodeAddress>`
    select nodename as host, nodeport as port from pg_dist_node where groupid = 0`.execute(admin)
  const nodes = [coordinator, ...workers]
  const drop = async (): Promise<void> => {
    for (const node of nodes) {
      const db =
        node === coordinator ? admin : await connect(nodeUrl(coordinatorUrl, node, 'postgres'), { maxConnections: 1, requireVector: false })
      await sql`drop database if exists ${sql.id(name)} with (force)`.execute(db).catch(() => {})
      if (db !== admin) await db.close()
    }
    await admin.close()
  }
  try {
    for (const node of nodes) {
      const server = await connect(nodeUrl(coordinatorUrl, node, 'postgres'), { maxConnections: 1, requireVector: false })
      try {
        // Citus would propagate this CREATE DATABASE to the workers itself; each node creates its own here.
        await sql`set citus.enable_create_database_propagation = off`.execute(server).catch(() => {})
        await sql`create database ${sql.id(name)}`.execute(server)
      } finally {
        await server.close()
      }
      const db = await connect(nodeUrl(coordinatorUrl, node, name), { maxConnections: 1, requireVector: false })
      try {
        await sql`create extension citus`.execute(db)
        await sql`create extension vector`.execute(db)
        await sql`insert into pg_dist_authinfo (nodeid, rolename, authinfo) values (0, current_user, ${`password=${password}`})`.execute(db)
      } finally {
        await db.close()
      }
    }
    const db = await connect(nodeUrl(coordinatorUrl, coordinator, name), { maxConnections: 1, requireVector: false })
    try {
      const c = coord[0] ?? coordinator
      await sql`select citus_set_coordinator_host(${c.host}, ${c.port})`.execute(db)
      for (const w of workers) await sql`select citus_add_node(${w.host}, ${w.port})`.execute(db)
    } finally {
      await db.close()
    }
  } catch (err) {
    await drop()
    throw err
  }
  return drop
}
