import { expect } from 'vitest'
import { MigrationRequiredError, PgVectorStore } from '../../src/index.js'
import { useRuntimeRole } from '../support/runtime-role.js'
import { itWithServer } from '../support/skip.js'
import { useTestDatabase } from '../support/test-database.js'
import { modeSuite, READS, ROLLUP, storeConfig, WRITES } from './harness.js'
import { openRowSecure } from './worlds.js'

/**
 * Conformance, mode (d) the DML-only runtime role on a store and a rollup with `isolation: 'rls'`
 * (created by the owner's migrations that grant the role its rights): every command as the role,
 * and raw SQL as the role that must see exactly the tenant it set (none without) and no row of the
 * rollup's fleet level (fleet-wide admin data, read through `readAcross`). On PGlite the
 * role is taken with SET ROLE on the one session.
 */
const t = useTestDatabase()
const role = useRuntimeRole(t, 'conf_rt')
const server = Boolean(t.target.url)

modeSuite(
  {
    name: 'rls',
    commands: [
      ...READS,
      ...WRITES,
      ...ROLLUP,
      'rawRoleRead',
      'rawFleetRead',
      'foreignDirtyAppend',
      'poisonedWrite',
      ...(server ? ['killedWrite'] : []),
    ],
    writes: WRITES,
    runs: server ? 10 : 6,
    ...(server ? {} : { leftOut: { kinds: ['killedWrite'], reason: 'PGlite has one connection: nothing can kill its backend' } }),
  },
  async () => {
    await role.create()
    return openRowSecure(t.db, role.name, server ? await role.as(async (db) => db) : undefined, t.directUrl)
  },
)

// issue 41 #5, outside the command sequences: a handle opened without the recorded isolation
// (opened and read 0 rows on 93839e9; refused since the isolation check).
itWithServer(t.target)("the runtime role opening the rls store without isolation: 'rls' is refused (issue 41 #5)", async () => {
  const err = await role.as((db) => PgVectorStore.open(db, storeConfig('none'))).catch((e: unknown) => e)
  expect(err).toBeInstanceOf(MigrationRequiredError)
})
