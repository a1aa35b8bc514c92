import { ESLint } from 'eslint'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'

/**
 * The import-rooms rule (scripts/eslint/import-rooms.js, configured in eslint.config.js) on code
 * placed in the rooms of src/: an import that climbs a room, one that skips a room's entry file,
 * and a type import that climbs all fail `npx eslint .`; imports down through entry files pass.
 */
const root = join(import.meta.dirname, '..', '..')
const eslint = new ESLint({ cwd: root })

async function roomErrors(file: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: join(root, file) })
  return result!.messages.filter((m) => m.ruleId === 'rooms/import-rooms').map((m) => m.message)
}

describe('import rooms (ESLint)', () => {
  it('a room that imports a room above it fails, type imports too', async () => {
    expect(
      await roomErrors('src/store/schema/probe.ts', "import { TenantStore } from '../tenant/index.js'\nexport const x = TenantStore\n"),
    ).toEqual([expect.stringMatching(/^src\/store\/schema may not import src\/store\/tenant/)])
    expect(
      await roomErrors(
        'src/store/tenant/probe.ts',
        "import type { OptimizeResult } from '../tuning/index.js'\nexport type X = OptimizeResult\n",
      ),
    ).toEqual([expect.stringMatching(/^src\/store\/tenant may not import src\/store\/tuning/)])
    expect(
      await roomErrors('src/rollup/probe.ts', "import { PgVectorStore } from '../store/index.js'\nexport const x = PgVectorStore\n"),
    ).toEqual([expect.stringMatching(/^src\/rollup may not import src\/store/)])
    expect(
      await roomErrors('src/store/config/probe.ts', "import { Database } from '../../db/database.js'\nexport const x = Database\n"),
    ).toEqual([expect.stringMatching(/^src\/store\/config may not import src\/db/)])
  })

  it('another room is entered through its entry file', async () => {
    expect(
      await roomErrors(
        'src/store/tenant/probe.ts',
        "import { tenantSizes } from '../schema/store-catalog.js'\nexport const x = tenantSizes\n",
      ),
    ).toEqual([expect.stringMatching(/through its entry file src\/store\/schema\/index\.ts/)])
    expect(await roomErrors('src/probe.ts', "export { TenantStore } from './store/tenant/tenant-store.js'\n")).toEqual([
      expect.stringMatching(/through its entry file src\/store\/index\.ts/),
    ])
  })

  it('imports down through entry files, within a room and of src/errors.ts pass', async () => {
    const code = [
      "import { tenantSizes } from '../schema/index.js'",
      "import { assertEmbedding } from '../ingest/index.js'",
      "import { TenantStore } from './tenant-store.js'",
      "import { InvalidArgumentError } from '../../errors.js'",
      "import { SQLSTATE } from '../../sql/sqlstate.js'",
      'export const x = [tenantSizes, assertEmbedding, TenantStore, InvalidArgumentError, SQLSTATE]',
    ].join('\n')
    expect(await roomErrors('src/store/tenant/probe.ts', `${code}\n`)).toEqual([])
  })
})
