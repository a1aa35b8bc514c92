import { existsSync, readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'

/**
 * The README teaches: short, the install line and an app that runs near the top, the app the same
 * code as examples/readme-app.ts (which CI runs against PostgreSQL), and every link it has — absolute,
 * so they work from the installed package — naming a file (and heading) of this repository; the
 * benchmarks page that holds the measured runs links only to what exists.
 */
const root = new URL('../../', import.meta.url)
const REPOSITORY = 'https://github.com/pgscale/pgscale/blob/main/'
const read = (path: string) => readFileSync(new URL(path, root), 'utf8')
const readme = read('README.md')
const lines = readme.split('\n')

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
const slug = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-')

/** The anchors of a markdown file's headings. */
function anchors(path: string): Set<string> {
  const text = read(path).replace(/```[\s\S]*?```/g, '')
  return new Set([...text.matchAll(/^#{1,6} (.+)$/gm)].map((m) => slug(m[1]!)))
}

/** Checks a link to `path#anchor` inside the repository. */
function expectTarget(path: string, anchor: string | undefined, from: string): void {
  expect(existsSync(new URL(path, root)), `${from}: ${path} exists`).toBe(true)
  if (anchor && path.endsWith('.md')) expect(anchors(path), `${from}: ${path}#${anchor}`).toContain(anchor)
}

const links = (text: string) => [...text.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!)

describe('README.md', () => {
  it('is at most 150 lines, with the install before line 25 and the app before line 80', () => {
    expect(lines.length).toBeLessThanOrEqual(150)
    expect(lines.findIndex((l) => l.includes('npm i pgscale kysely pg')) + 1).toBeLessThan(25)
    expect(lines.findIndex((l) => l.startsWith('await db.close()')) + 1).toBeLessThan(80)
    expect(readme).toContain('npm test')
  })

  it('its app is examples/readme-app.ts, line for line', () => {
    const app = read('examples/readme-app.ts').trimEnd()
    expect(readme).toContain('```ts\n' + app + '\n```')
  })

  it('links absolutely, to files and headings that exist', () => {
    const found = links(readme)
    expect(found.length).toBeGreaterThan(10)
    for (const link of found) {
      expect(link, 'an absolute link').toMatch(/^https:\/\//)
      if (!link.startsWith(REPOSITORY)) continue
      const [path, anchor] = link
        .slice(REPOSITORY.length)
        .replace(/\?raw=true$/, '')
        .split('#')
      expectTarget(path!, anchor, 'README.md')
    }
  })
})

describe('docs/benchmarks.md', () => {
  it('links to files and headings that exist', () => {
    for (const link of links(read('docs/benchmarks.md'))) {
      if (/^https?:/.test(link)) continue
      const [path, anchor] = link.split('#')
      if (!path) expect(anchors('docs/benchmarks.md'), `#${anchor}`).toContain(anchor)
      else expectTarget(new URL(path, new URL('docs/', root)).pathname.slice(new URL(root).pathname.length), anchor, 'docs/benchmarks.md')
    }
  })
})
