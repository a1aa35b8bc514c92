import { readFileSync } from 'node:fs'
import semver from 'semver'
import { describe, expect, it } from 'vitest'

/**
 * The `engines` field is a promise: every package `npm ci` installs accepts the Node versions it
 * claims (the claimed range is a subset of each package's), so npm prints no EBADENGINE warning on
 * any of them.
 */
const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { engines: { node: string } }
const lock = JSON.parse(readFileSync(new URL('../../package-lock.json', import.meta.url), 'utf8')) as {
  packages: Record<string, { version?: string; engines?: { node?: string } | string[] }>
}

describe('engines', () => {
  const claimed = manifest.engines.node

  it('the claimed range includes the Node running this', () => {
    expect(semver.satisfies(process.versions.node, claimed), `${process.versions.node} in ${claimed}`).toBe(true)
  })

  it('every locked package accepts every Node version the package claims', () => {
    const refused: string[] = []
    for (const [path, entry] of Object.entries(lock.packages)) {
      const range = Array.isArray(entry.engines) ? undefined : entry.engines?.node
      if (!path || !range) continue
      if (!semver.subset(claimed, range)) refused.push(`${path}@${entry.version} wants node ${range}; the package claims ${claimed}`)
    }
    expect(refused).toEqual([])
  })
})
