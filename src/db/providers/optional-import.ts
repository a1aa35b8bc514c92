import { ProviderUnavailableError } from '../../errors.js'

/**
 * Loads a provider's heavy, optional dependency (an optional peer dependency of pgscale, so apps
 * that never use that provider do not install it). When it is not installed, a typed error names
 * the package and the install command.
 *
 * ### Examples
 * ```ts
 * const { PGlite } = await optionalImport('embedded', '@electric-sql/pglite', '~0.4.6', () => import('@electric-sql/pglite'))
 * ```
 */
export async function optionalImport<T>(provider: string, pkg: string, range: string, load: () => Promise<T>): Promise<T> {
  try {
    return await load()
  } catch (err) {
    const code = (err as { code?: string }).code
    if (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') {
      throw new ProviderUnavailableError(
        provider,
        `provider "${provider}" needs ${pkg}, an optional dependency of pgscale: npm install ${pkg}@${range}`,
        { cause: err },
      )
    }
    throw err
  }
}
