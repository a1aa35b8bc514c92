import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'

/**
 * The LangChain example app (examples/langchain, installed by `npm run adapters:install --
 * langchain`): LangChain, its community `PGVectorStore`, `pg`, and pgscale itself as an app gets it
 * (the packed copy), loaded from there so that the adapter and LangChain's store share one
 * `@langchain/core`. The bench runs from the repository's root.
 */
export const LANGCHAIN_APP = join(process.cwd(), 'examples', 'langchain')

/** Why the app cannot be used ('' when it can). */
export function langchainAppMissing(): string {
  for (const pkg of ['@langchain/core', '@langchain/community', 'pg', 'pgscale']) {
    if (!existsSync(join(LANGCHAIN_APP, 'node_modules', pkg, 'package.json'))) {
      return `${pkg} is not installed in examples/langchain: run npm run build && npm run adapters:install -- langchain (from the repository's root)`
    }
  }
  if (!existsSync(join(LANGCHAIN_APP, 'node_modules', 'pgscale', 'dist', 'src', 'adapters', 'langchain', 'index.js'))) {
    return 'the packed pgscale in examples/langchain has no pgscale/langchain: run npm run build && npm run adapters:install -- langchain'
  }
  return ''
}

/**
 * Imports `specifier` (`pkg` or `pkg/subpath`) as the example app would: the package of its
 * node_modules, the ESM file its `exports` name for the subpath (`import`, else `default`).
 *
 * ### Examples
 * ```ts
 * const { PGVectorStore } = await importFromApp<any>('@langchain/community/vectorstores/pgvector')
 * ```
 */
export async function importFromApp<T>(specifier: string): Promise<T> {
  const parts = specifier.split('/')
  const nameLength = specifier.startsWith('@') ? 2 : 1
  const name = parts.slice(0, nameLength).join('/')
  const subpath = parts.length > nameLength ? `./${parts.slice(nameLength).join('/')}` : '.'
  const dir = join(LANGCHAIN_APP, 'node_modules', name)
  const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { exports?: Record<string, unknown>; main?: string }
  const target = esmTarget(manifest.exports?.[subpath]) ?? (subpath === '.' ? (manifest.main ?? 'index.js') : undefined)
  if (!target) throw new Error(`${name} exports no ${subpath}`)
  return (await import(pathToFileURL(join(dir, target)).href)) as T
}

/** The file an `exports` entry gives an ESM import: a string, or its `import` / `node` / `default` condition. */
function esmTarget(entry: unknown): string | undefined {
  if (typeof entry === 'string') return entry
  if (entry === null || typeof entry !== 'object') return undefined
  const conditions = entry as Record<string, unknown>
  for (const condition of ['import', 'node', 'default']) {
    const found = esmTarget(conditions[condition])
    if (found) return found
  }
  return undefined
}
