/**
 * A load worker thread: opens its own pool and store on the load's table (with `--replicas`, its
 * own pools on the standbys and a ReplicaSet over them), builds its context from the shared truth
 * and inputs, runs its share of each step's clients (`LoadWorkers`), and tells its routing counts
 * when asked.
 */
import { parentPort, workerData } from 'node:worker_threads'
import { CorpusTruth } from './corpus-truth.js'
import { loadContext } from './load-inputs.js'
import { runClients } from './load-step.js'
import type { FromWorker, LoadWorkerData, ToWorker } from './load-workers.js'
import { openWorkerStore } from './replicas/worker-store.js'

const data = workerData as LoadWorkerData
const port = parentPort!
const send = (message: FromWorker) => port.postMessage(message)

try {
  const opened = await openWorkerStore(data)
  const ctx = loadContext({
    store: opened.store,
    pool: { db: opened.pool, connections: data.connections },
    truth: CorpusTruth.attach(data.truth),
    inputs: data.inputs,
    mix: data.mix,
    seed: data.seed,
    consistency: opened.consistency,
  })
  port.on('message', (message: ToWorker) => {
    if (message.type === 'close') {
      void opened.close().finally(() => {
        send({ type: 'closed' })
        port.close()
      })
      return
    }
    if (message.type === 'stats') {
      send({ type: 'stats', stats: opened.stats() })
      return
    }
    runClients(message.mix ? { ...ctx, mix: message.mix } : ctx, message.clients, message.measureFrom, message.measureTo).then(
      (result) => send({ type: 'done', result }),
      (err: unknown) => send({ type: 'failed', message: err instanceof Error ? err.message : String(err) }),
    )
  })
  send({ type: 'ready' })
} catch (err) {
  send({ type: 'failed', message: err instanceof Error ? err.message : String(err) })
}
