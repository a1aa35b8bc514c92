import { Worker, type WorkerOptions } from 'node:worker_threads'

/**
 * Starts a worker thread on the module at `url`. A compiled bench (`dist/`) runs its `.js` file; a
 * bench run from its TypeScript sources (`tsx`, vitest) registers tsx's loader in the worker first —
 * Node 20 does not pass `--import` loaders on to a worker's own entry.
 *
 * ### Examples
 * ```ts
 * const worker = startWorker(new URL('./load-worker.js', import.meta.url), { workerData: { id: 1 } })
 * ```
 */
export function startWorker(url: URL, options: WorkerOptions = {}): Worker {
  const typescript = url.pathname.endsWith('.ts') || !import.meta.url.endsWith('.js')
  if (!typescript) return new Worker(url, options)
  const entry = url.pathname.endsWith('.js') ? new URL(url.href.replace(/\.js$/, '.ts')) : url
  const loader = import.meta.resolve('tsx/esm/api')
  const bootstrap = `import(${JSON.stringify(loader)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(entry.href)}) })`
  return new Worker(bootstrap, { ...options, eval: true })
}
