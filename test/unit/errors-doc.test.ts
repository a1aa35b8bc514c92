import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import * as pgscale from '../../src/index.js'

/** docs/database.md's error table names every error class pgscale exports, with its code. */
describe('the error table in docs/database.md', () => {
  it('lists exactly the exported PgScaleError classes, each with the code it carries', () => {
    const doc = readFileSync(new URL('../../docs/database.md', import.meta.url), 'utf8')
    const table = doc.slice(doc.indexOf('| class | `code` | when |'))
    const documented = new Map([...table.matchAll(/^\| `(\w+Error)`[^|]*\| `([A-Z_]+)` \|/gm)].map((m) => [m[1]!, m[2]!]))
    const classes = Object.entries(pgscale).filter(
      ([, value]) => typeof value === 'function' && (value === pgscale.PgScaleError || value.prototype instanceof pgscale.PgScaleError),
    )
    expect([...documented.keys()].sort()).toEqual(
      classes
        .map(([name]) => name)
        .filter((n) => n !== 'PgScaleError')
        .sort(),
    )
    const codes: Record<string, string> = {
      InvalidArgumentError: new pgscale.InvalidArgumentError('x').code,
      InvalidIdentifierError: new pgscale.InvalidIdentifierError('x', 'y').code,
      DimensionMismatchError: new pgscale.DimensionMismatchError(1, 2, 'z').code,
      ProviderUnavailableError: new pgscale.ProviderUnavailableError('p', 'x').code,
      DatabaseNotConfiguredError: new pgscale.DatabaseNotConfiguredError('x').code,
      ConnectionError: new pgscale.ConnectionError('x').code,
      ExtensionMissingError: new pgscale.ExtensionMissingError('x').code,
      SchemaMismatchError: new pgscale.SchemaMismatchError('x').code,
      InvalidTimeZoneError: new pgscale.InvalidTimeZoneError('Mars/Olympus').code,
      IndexBuildError: new pgscale.IndexBuildError('x').code,
      PlanAssertionError: new pgscale.PlanAssertionError('x').code,
      PlanRegressionError: new pgscale.PlanRegressionError('x', [], [], 'f').code,
      DatabaseError: new pgscale.DatabaseError({ message: 'x', code: '23505' }).code,
      ReplicaTimeoutError: new pgscale.ReplicaTimeoutError(500).code,
      MigrationError: new pgscale.MigrationError([], new Error('x')).code,
      MigrationRequiredError: new pgscale.MigrationRequiredError('store:public.x', 'pgscale migrate', 'x').code,
      PrivilegeError: new pgscale.PrivilegeError('optimize', 'owner', 'x').code,
      EmbeddingSpaceError: new pgscale.EmbeddingSpaceError('x').code,
    }
    for (const [name, code] of documented) expect(code, name).toBe(codes[name])
  })
})
