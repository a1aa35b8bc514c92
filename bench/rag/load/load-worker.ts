/**
 * A load worker thread: opens its own pool and store on the load's table, builds its context from
 * the shared truth and inputs, and runs its share of each step's clients (`LoadWorkers`).
 */
import { parentPort, workerData } from 'node:worker_threads'
import { connect, PgVectorStore } from '../../../src/index.js'
import { CorpusTruth } from './corpus-truth.js'
import { loadContext } from './load-inputs.js'
import { runClients } from './load-step.js'
import type { FromWorker, LoadWorkerData, ToWorker } from './load-workers.js'

const data = workerData as LoadWorkerData
const port = parentPort!
const send = (message: FromWorker) => port.postMessage(message)

try {
  const pool = await connect({ connectionString: data.url, max: data.connections, connectionTimeoutMillis: data.connectionTimeoutMillis })
  const store = await PgVectorStore.open(pool, {
    table: data.table,
    dimensions: data.dimensions,
    ...(data.partitions ? { partitions: data.partitions } : {}),
  })
  const ctx = loadContext({
    store,
    pool: { db: pool, connections: data.connections },
    truth: CorpusTruth.attach(data.truth),
    inputs: data.inputs,
    mix: data.mix,
    seed: data.seed,
  })
  port.on('message', (message: ToWorker) => {
    if (message.type === 'close') {
      void pool.close().finally(() => {
        send({ type: 'closed' })
        port.close()
      })
      return
    }
    runClients(ctx, message.clients, message.measureFrom, message.measureTo).then(
      (result) => send({ type: 'done', result }),
      (err: unknown) => send({ type: 'failed', message: err instanceof Error ? err.message : String(err) }),
    )
  })
  send({ type: 'ready' })
} catch (err) {
  send({ type: 'failed', message: err instanceof Error ? err.message : String(err) })
}
