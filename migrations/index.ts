import type { Migration } from 'kysely'
import * as vectorExtension from './0001-vector-extension.js'

/**
 * pgscale's schema changes, in order. A static map (not a folder scan) so it works from `dist/`,
 * bundlers and tests alike. Names sort in the order they must run.
 */
export const migrations: Record<string, Migration> = {
  '0001-vector-extension': vectorExtension,
}
