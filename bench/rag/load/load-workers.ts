import type { Worker } from 'node:worker_threads'
import type { ReplicaStats } from '../../../src/index.js'
import { startWorker } from '../../workers/start-worker.js'
import type { SharedTruth } from './corpus-truth.js'
import type { LoadOperation } from './ladder-analysis.js'
import type { LoadInputs } from './load-inputs.js'
import type { ClientRunner, ClientsResult } from './load-step.js'
import type { WorkerReplicas } from './replicas/worker-store.js'

/** What every load worker thread starts from (`workerData`). */
export interface LoadWorkerData {
  url: string
  table: string
  dimensions: number
  /** The table's hash partitions (0: none), as the bench opened it. */
  partitions: number
  truth: SharedTruth
  inputs: LoadInputs
  mix: Record<LoadOperation, number>
  /** This worker's random stream. */
  seed: string
  /** Its own pool's size: the most clients it runs in a step. */
  connections: number
  connectionTimeoutMillis: number
  /** With `--replicas`: the standbys its reads are routed to, and the shared write positions. */
  replicas?: WorkerReplicas
}

/** Messages between the bench and a load worker. */
export type ToWorker =
  | { type: 'step'; clients: number; measureFrom: number; measureTo: number; mix?: Record<LoadOperation, number> }
  | { type: 'stats' }
  | { type: 'close' }
export type FromWorker =
  | { type: 'ready' }
  | { type: 'done'; result: ClientsResult }
  | { type: 'stats'; stats: ReplicaStats | null }
  | { type: 'failed'; message: string }
  | { type: 'closed' }

/** How `workers` threads share a step of `clients` clients: as evenly as they can, the first ones one more. */
export function clientsPerWorker(clients: number, workers: number): number[] {
  const used = Math.max(1, Math.min(workers, clients))
  return Array.from({ length: used }, (_, i) => Math.floor(clients / used) + (i < clients % used ? 1 : 0))
}

/**
 * The load's clients, spread over worker threads, each with its own pool and store (as app servers
 * would be), so the generator is not what saturates: a step of N clients runs them on min(N, W)
 * threads (`clientsPerWorker`). The threads share the truth and the inputs (shared memory) and
 * report their tallies and their own CPU per step.
 *
 * ### Examples
 * ```ts
 * const workers = await LoadWorkers.start(4, (i) => ({ url, table, dimensions, partitions: 0, truth: truth.share(), inputs, mix, seed: `s:w${i}`, connections: 2, connectionTimeoutMillis: 10_000 }))
 * const step = await runLoadStep(workers, observer, 8, 15, 3)
 * await workers.close()
 * ```
 */
export class LoadWorkers implements ClientRunner {
  readonly #workers: Worker[]

  private constructor(workers: Worker[]) {
    this.#workers = workers
  }

  /** Starts `count` workers one after another (each opens its store: concurrent opens would race on the extension). */
  static async start(count: number, data: (index: number) => LoadWorkerData): Promise<LoadWorkers> {
    const workers: Worker[] = []
    try {
      for (let i = 0; i < count; i++) {
        const worker = startWorker(new URL('./load-worker.js', import.meta.url), { workerData: data(i) })
        workers.push(worker)
        await reply(worker, 'ready')
      }
    } catch (err) {
      await Promise.all(workers.map((w) => w.terminate()))
      throw err
    }
    return new LoadWorkers(workers)
  }

  /** How many threads the load has. */
  get size(): number {
    return this.#workers.length
  }

  async run(clients: number, measureFrom: number, measureTo: number, mix?: Record<LoadOperation, number>): Promise<ClientsResult[]> {
    const shares = clientsPerWorker(clients, this.#workers.length)
    return Promise.all(
      shares.map(async (n, i) => {
        const worker = this.#workers[i]!
        const done = reply(worker, 'done')
        worker.postMessage({ type: 'step', clients: n, measureFrom, measureTo, mix } satisfies ToWorker)
        return ((await done) as Extract<FromWorker, { type: 'done' }>).result
      }),
    )
  }

  /** Each thread's replica routing counts since it started (`null` for a thread without replicas); answered between operations, mid-step too. */
  async routingStats(): Promise<Array<ReplicaStats | null>> {
    return Promise.all(
      this.#workers.map(async (worker) => {
        const answer = reply(worker, 'stats')
        worker.postMessage({ type: 'stats' } satisfies ToWorker)
        return ((await answer) as Extract<FromWorker, { type: 'stats' }>).stats
      }),
    )
  }

  /** Closes every worker's pool and ends the threads. */
  async close(): Promise<void> {
    await Promise.all(
      this.#workers.map(async (worker) => {
        const closed = reply(worker, 'closed').catch(() => undefined)
        worker.postMessage({ type: 'close' } satisfies ToWorker)
        await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, 10_000))])
        await worker.terminate()
      }),
    )
  }
}

/** The worker's next message of `type`; its `failed` message, error or exit rejects. */
function reply(worker: Worker, type: FromWorker['type']): Promise<FromWorker> {
  return new Promise((resolve, reject) => {
    const cleanup = () => {
      worker.off('message', onMessage)
      worker.off('error', onError)
      worker.off('exit', onExit)
    }
    const onMessage = (message: FromWorker) => {
      if (message.type === 'failed') {
        cleanup()
        reject(new Error(`load worker: ${message.message}`))
      } else if (message.type === type) {
        cleanup()
        resolve(message)
      }
    }
    const onError = (err: Error) => (cleanup(), reject(err))
    const onExit = (code: number) => (cleanup(), reject(new Error(`load worker exited (code ${code}) before '${type}'`)))
    worker.on('message', onMessage)
    worker.on('error', onError)
    worker.on('exit', onExit)
  })
}
