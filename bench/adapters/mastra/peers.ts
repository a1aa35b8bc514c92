import { existsSync, readFileSync } from 'node:fs'
import { register } from 'node:module'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'

/** Mastra's own pgvector store and pgscale's adapter, loaded side by side. */
export interface MastraPeers {
  /** `PgVector` of @mastra/pg, as an app constructs it. */
  PgVector: new (config: { id: string; connectionString: string }) => any
  /** pgscale/mastra, from source. */
  adapter: typeof import('../../../src/adapters/mastra/index.js')
  /** @mastra/pg's version, as installed in examples/mastra. */
  pgVersion: string
  /** @mastra/core's version, as installed in examples/mastra. */
  coreVersion: string
}

const APP = join(import.meta.dirname, '..', '..', '..', 'examples', 'mastra')

/**
 * Resolves `@mastra/*` imports made outside examples/mastra as if made from inside it (what
 * vitest.config.ts does for the tests): the adapter's `@mastra/core` and @mastra/pg's are then one
 * copy, the example app's. A module resolution hook, registered once per process.
 */
const HOOK = `
let anchor
export function initialize(data) { anchor = data.anchor }
export async function resolve(specifier, context, next) {
  if (specifier.startsWith('@mastra/') && !(context.parentURL ?? '').includes('/examples/mastra/')) {
    return next(specifier, { ...context, parentURL: anchor })
  }
  return next(specifier, context)
}`

let registered = false

/**
 * Loads @mastra/pg and pgscale/mastra from the example app's install (`npm run adapters:install
 * -- mastra`); throws, naming the install command, when it is missing.
 *
 * ### Examples
 * ```ts
 * const { PgVector, adapter } = await loadMastraPeers()
 * ```
 */
export async function loadMastraPeers(): Promise<MastraPeers> {
  const pg = join(APP, 'node_modules', '@mastra', 'pg', 'package.json')
  const core = join(APP, 'node_modules', '@mastra', 'core', 'package.json')
  if (!existsSync(pg) || !existsSync(core)) {
    throw new Error('the Mastra bench needs @mastra/core and @mastra/pg in examples/mastra: run npm run adapters:install -- mastra')
  }
  if (!registered) {
    register(`data:text/javascript,${encodeURIComponent(HOOK)}`, {
      parentURL: import.meta.url,
      data: { anchor: pathToFileURL(join(APP, 'package.json')).href },
    })
    registered = true
  }
  const [mastraPg, adapter] = await Promise.all([import('@mastra/pg' as string), import('../../../src/adapters/mastra/index.js')])
  const version = (file: string) => (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version
  return { PgVector: mastraPg.PgVector, adapter, pgVersion: version(pg), coreVersion: version(core) }
}
