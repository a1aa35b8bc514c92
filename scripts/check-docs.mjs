#!/usr/bin/env node
// The docs site's check, for CI (#45): builds the TypeDoc site (typedoc.json: the guides of docs/
// and the API reference) into site/ with every TypeDoc warning an error — a broken link in a
// comment or a guide, a missing anchor, a public symbol without a doc comment (`validation`,
// `requiredToBeDocumented`) —, then checks every relative link and anchor of the generated HTML,
// and takes headless screenshots of the home page and of PgVectorStore's API page with Debian's
// chromium (`apt-get install -y chromium`) into site/screenshots/ (git-ignored with site/), for a
// person to look at. Exits 1 on any failure; prints each step's time.
//
//   node scripts/check-docs.mjs [--no-screenshots]
//
// Fast on purpose (CI's budget): TypeDoc skips its type check (`skipErrorChecking`: CI's
// typecheck part already ran tsc on the same sources) and external symbols (`excludeExternals`,
// in typedoc.json: Kysely's inherited members, whose comments link into Kysely) and leaves the
// comments and guides out of the search index (`npm run docs` keeps them: the box still searches
// names here); the two screenshots run side by side. CPU time on the project's VM (busy): TypeDoc
// 26.6 s as `npm run docs`, 15.1 s skipping its type check, 13.8 s without the full-text index.
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { performance } from 'node:perf_hooks'
import { clearTimeout, setTimeout } from 'node:timers'

const root = resolve(import.meta.dirname, '..')
const site = join(root, 'site')
const screenshots = process.argv.includes('--no-screenshots') ? null : join(site, 'screenshots')
const started = performance.now()
const seconds = (t0) => `${((performance.now() - t0) / 1000).toFixed(1)} s`
const failures = []

// 1. TypeDoc, every warning a failure. Not --treatWarningsAsErrors: that stops before rendering, so
// the guides' anchors (checked while rendering) would go unchecked and there would be no site.
let t0 = performance.now()
const typedoc = spawnSync(
  process.execPath,
  [
    join(root, 'node_modules/typedoc/bin/typedoc'),
    ...['--out', site, '--skipErrorChecking', '--searchInComments', 'false', '--searchInDocuments', 'false'],
  ],
  {
    cwd: root,
    encoding: 'utf8',
    env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' },
  },
)
const typedocOutput = `${typedoc.stdout}${typedoc.stderr}`.replace(new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, 'g'), '')
const problems = typedocOutput.split('\n').filter((l) => /^\[(warning|error)\]/.test(l) && !/Found \d+ errors and \d+ warnings/.test(l))
console.log(`check-docs: typedoc exit ${typedoc.status}, ${problems.length} warnings/errors, in ${seconds(t0)}`)
if (typedoc.status !== 0 || problems.length) {
  console.log(typedocOutput.trim())
  failures.push(
    `typedoc: ${problems.length} warnings/errors (above) — a broken link or anchor, or a public symbol without a doc comment — exit ${typedoc.status}`,
  )
}

// 2. Every relative href/src of the generated HTML points at a file, and its #anchor at an id there.
t0 = performance.now()
const pages = existsSync(site) ? walk(site).filter((f) => f.endsWith('.html')) : []
const ids = new Map()
const idsOf = (file) => {
  if (!ids.has(file)) ids.set(file, new Set([...readFileSync(file, 'utf8').matchAll(/\s(?:id|name)="([^"]+)"/g)].map((m) => m[1])))
  return ids.get(file)
}
let links = 0
const broken = []
for (const page of pages) {
  const html = readFileSync(page, 'utf8')
  for (const [, url] of html.matchAll(/\s(?:href|src)="([^"]*)"/g)) {
    if (/^([a-z][a-z0-9+.-]*:|\/\/)/i.test(url)) continue // http(s):, mailto:, data:, javascript:
    links++
    const decoded = url.replace(/&amp;/g, '&')
    const [path, anchor] = decoded.split('#', 2)
    const target = path ? resolve(dirname(page), decodeURIComponent(path.split('?')[0])) : page
    const where = `${relative(site, page)} → ${url}`
    if (!existsSync(target)) broken.push(`${where}: no such file`)
    // hierarchy.html's entries are drawn by its script (assets/hierarchy.js): no id to find in the file.
    else if (anchor && target.endsWith('.html') && !target.endsWith('hierarchy.html') && !idsOf(target).has(decodeURIComponent(anchor)))
      broken.push(`${where}: no such anchor`)
  }
}
console.log(`check-docs: ${links} relative links in ${pages.length} pages, ${broken.length} broken, in ${seconds(t0)}`)
if (pages.length === 0) failures.push('no page was generated in site/')
for (const b of broken.slice(0, 50)) console.log(`  broken link: ${b}`)
if (broken.length) failures.push(`${broken.length} broken link(s) in the generated site (above)`)

// 3. Screenshots of the home page and of PgVectorStore's API page, in headless chromium.
if (screenshots && pages.length) {
  t0 = performance.now()
  const chromium = ['chromium', 'chromium-browser'].find((c) => spawnSync('sh', ['-c', `command -v ${c}`]).status === 0)
  const storePage = pages.find((p) => /^classes\/(.*\.)?PgVectorStore\.html$/.test(relative(site, p)))
  if (!chromium) failures.push("no chromium to take the site's screenshots: apt-get install -y chromium (or pass --no-screenshots)")
  else if (!storePage) failures.push("PgVectorStore's API page is not in site/classes/")
  else {
    mkdirSync(screenshots, { recursive: true })
    const shots = [
      { name: 'home.png', page: join(site, 'index.html') },
      { name: 'pgvectorstore-api.png', page: storePage },
    ]
    const results = await Promise.all(shots.map((s) => screenshot(chromium, s.page, join(screenshots, s.name))))
    for (const [i, r] of results.entries()) {
      const file = join(screenshots, shots[i].name)
      const size = existsSync(file) ? statSync(file).size : 0
      if (r.status !== 0 || size < 10_000) {
        failures.push(
          `screenshot ${shots[i].name} failed (chromium exit ${r.status}, ${size} bytes): ${r.output.trim().split('\n').slice(-3).join(' | ')}`,
        )
      } else
        console.log(`check-docs: screenshot ${relative(root, file)} (${Math.round(size / 1024)} KiB) of ${relative(root, shots[i].page)}`)
    }
    console.log(`check-docs: screenshots in ${seconds(t0)}`)
  }
}

console.log(`check-docs: ${failures.length ? 'FAILED' : 'ok'} in ${seconds(started)}`)
for (const f of failures) console.log(`  ${f}`)
process.exit(failures.length ? 1 : 0)

function walk(dir, out = []) {
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry)
    if (statSync(path).isDirectory()) walk(path, out)
    else out.push(path)
  }
  return out
}

/** One page to a PNG, 1280×1000, after its scripts ran (TypeDoc's navigation is built by script). */
function screenshot(chromium, page, file) {
  const args = [
    '--headless',
    '--disable-gpu',
    '--hide-scrollbars',
    '--no-first-run',
    '--no-default-browser-check',
    '--window-size=1280,1000',
    '--virtual-time-budget=3000',
    `--user-data-dir=${join(site, '.chromium-profile', file.replace(/\W/g, '_'))}`,
    `--screenshot=${file}`,
    `file://${page}`,
  ]
  // Root (a CI container) cannot use chromium's sandbox.
  if (process.getuid?.() === 0) args.unshift('--no-sandbox')
  return new Promise((done) => {
    const child = spawn(chromium, args, { stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    child.stdout.on('data', (d) => (output += d))
    child.stderr.on('data', (d) => (output += d))
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000)
    child.on('close', (status) => {
      clearTimeout(timer)
      done({ status, output })
    })
  })
}
