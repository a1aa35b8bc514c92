import { connect, PgVectorStore, ReplicaSet } from '../../src/index.js'

/** Another process: writes one document for tenant initech through the primary and prints its consistency token. */
const db = await connect(process.argv[2]!)
const replicas = new ReplicaSet(db, [])
const store = await PgVectorStore.open(db, { table: 'rep_chunks', dimensions: 8, replicas, querySample: false })
await store
  .forTenant('initech')
  .replaceDocument('from-worker', [{ content: 'written by another process', embedding: [1, 0, 0, 0, 0, 0, 0, 0] }])
console.log(`token ${await store.consistencyToken('initech')}`)
await store.close()
await db.close()
