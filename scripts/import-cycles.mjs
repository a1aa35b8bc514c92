#!/usr/bin/env node
// Lists the import circles among the project's own TypeScript files, type imports included.
//
//   node scripts/import-cycles.mjs [dir ...]     # default: src bench cli test examples migrations
//
// Reads every `import … from`, `export … from`, side-effect `import '…'` and `import('…')` of a
// relative path, resolves `./x.js` to `./x.ts` (or `./x/index.ts`), and finds the strongly
// connected components of that graph (Tarjan). Prints each circle and exits 1 if there is any;
// prints "no import circles in N files" and exits 0 otherwise. No dependencies: CI runs it first.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'

const root = resolve(import.meta.dirname, '..')
const dirs = process.argv.slice(2).length ? process.argv.slice(2) : ['src', 'bench', 'cli', 'test', 'examples', 'migrations']

function walk(dir, out = []) {
  for (const entry of readdirSync(dir)) {
    if (entry === 'node_modules' || entry.startsWith('.')) continue
    const path = join(dir, entry)
    if (statSync(path).isDirectory()) walk(path, out)
    else if (/\.(ts|mts)$/.test(entry) && !entry.endsWith('.d.ts')) out.push(path)
  }
  return out
}

const SPECIFIERS = [
  /\b(?:import|export)\s+(?:type\s+)?[^'";]*?\bfrom\s*['"](\.{1,2}\/[^'"]+)['"]/g,
  /\bimport\s*['"](\.{1,2}\/[^'"]+)['"]/g,
  /\bimport\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g,
]

function resolveImport(from, spec) {
  const base = resolve(dirname(from), spec)
  const candidates = [base.replace(/\.js$/, '.ts'), base.replace(/\.mjs$/, '.mts'), `${base}.ts`, join(base, 'index.ts')]
  return candidates.find((c) => existsSync(c) && statSync(c).isFile())
}

function stripComments(text) {
  return text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1')
}

const files = dirs.filter((d) => existsSync(join(root, d))).flatMap((d) => walk(join(root, d)))
const edges = new Map(files.map((f) => [f, new Set()]))
for (const file of files) {
  const text = stripComments(readFileSync(file, 'utf8'))
  for (const pattern of SPECIFIERS) {
    for (const match of text.matchAll(pattern)) {
      const target = resolveImport(file, match[1])
      if (target && edges.has(target)) edges.get(file).add(target)
    }
  }
}

// Tarjan's strongly connected components, iterative (deep import chains overflow no stack).
let index = 0
const meta = new Map()
const stack = []
const circles = []
for (const start of files) {
  if (meta.has(start)) continue
  const work = [[start, [...edges.get(start)], 0]]
  meta.set(start, { index, low: index++, onStack: true })
  stack.push(start)
  while (work.length) {
    const frame = work[work.length - 1]
    const [node, next] = frame
    if (frame[2] < next.length) {
      const to = next[frame[2]++]
      if (!meta.has(to)) {
        meta.set(to, { index, low: index++, onStack: true })
        stack.push(to)
        work.push([to, [...edges.get(to)], 0])
      } else if (meta.get(to).onStack) {
        meta.get(node).low = Math.min(meta.get(node).low, meta.get(to).index)
      }
      continue
    }
    work.pop()
    if (work.length) {
      const parent = work[work.length - 1][0]
      meta.get(parent).low = Math.min(meta.get(parent).low, meta.get(node).low)
    }
    if (meta.get(node).low === meta.get(node).index) {
      const component = []
      let member
      do {
        member = stack.pop()
        meta.get(member).onStack = false
        component.push(member)
      } while (member !== node)
      if (component.length > 1 || edges.get(node).has(node)) circles.push(component)
    }
  }
}

const rel = (f) => relative(root, f)
if (circles.length === 0) {
  console.log(`no import circles in ${files.length} files (${dirs.join(', ')})`)
  process.exit(0)
}
console.log(`${circles.length} import circle(s):`)
for (const component of circles) {
  const members = new Set(component)
  console.log(`- ${component.length} files: ${component.map(rel).sort().join(', ')}`)
  for (const file of [...component].sort()) {
    const inside = [...edges.get(file)].filter((t) => members.has(t)).map(rel)
    console.log(`    ${rel(file)} → ${inside.join(', ')}`)
  }
}
process.exit(1)
