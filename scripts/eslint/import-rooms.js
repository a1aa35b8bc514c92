// An ESLint rule that keeps the rooms of src/ importing one way. Each room (a folder) names the
// rooms it may import; a file imports its own room freely, `src/errors.ts` from anywhere, and
// another room only through that room's entry file (`index.ts`) when it has one. Type imports
// count like any other: an import circle of types is still a circle.
//
// Options: { rooms: { '<folder>': ['<folder it may import>', ...], ... }, shared: ['<file anyone may import>'] }
// Folders are relative to the repository root; a file belongs to the longest folder that contains it.
import { existsSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve, sep } from 'node:path'

const root = resolve(import.meta.dirname, '..', '..')
const posix = (p) => p.split(sep).join('/')

function resolveTarget(fromFile, spec) {
  const base = resolve(dirname(fromFile), spec)
  const candidates = [base.replace(/\.js$/, '.ts'), `${base}.ts`, join(base, 'index.ts')]
  return candidates.find((c) => existsSync(c) && statSync(c).isFile())
}

function roomOf(file, rooms) {
  const rel = posix(relative(root, file))
  let best
  for (const room of rooms) if (rel.startsWith(`${room}/`) && (!best || room.length > best.length)) best = room
  return best
}

const rule = {
  meta: {
    type: 'problem',
    docs: { description: 'rooms of src/ import one way, and other rooms through their entry file' },
    schema: [{ type: 'object', properties: { rooms: { type: 'object' }, shared: { type: 'array' } }, additionalProperties: false }],
    messages: {
      upward: '{{from}} may not import {{to}} ({{target}}): {{from}} imports only {{allowed}}. Move what both need down, or the code up.',
      entry: 'import {{to}} through its entry file {{entry}}, not {{target}}.',
      homeless: '{{target}} is in no room of the import-rooms rule: add its folder to eslint.config.js.',
    },
  },
  create(context) {
    const { rooms = {}, shared = [] } = context.options[0] ?? {}
    const names = Object.keys(rooms)
    const file = context.filename ?? context.getFilename()
    const from = roomOf(file, names)
    if (!from) return {}
    const check = (node) => {
      const spec = node.source?.value
      if (typeof spec !== 'string' || !spec.startsWith('.')) return
      const targetFile = resolveTarget(file, spec)
      if (!targetFile) return
      const target = posix(relative(root, targetFile))
      if (shared.includes(target)) return
      const to = roomOf(targetFile, names)
      if (!to) {
        if (target.startsWith('src/') && posix(dirname(target)) !== 'src')
          context.report({ node: node.source, messageId: 'homeless', data: { target } })
        return
      }
      if (to === from) return
      // A room allowed to `from` admits its own sub-rooms only through its entry file.
      const door = rooms[from].find((room) => to === room || to.startsWith(`${room}/`))
      if (!door) {
        const allowed = rooms[from].length ? rooms[from].join(', ') : 'nothing outside itself'
        context.report({ node: node.source, messageId: 'upward', data: { from, to, target, allowed } })
        return
      }
      const entry = `${door}/index.ts`
      if ((door !== to || existsSync(join(root, entry))) && target !== entry)
        context.report({ node: node.source, messageId: 'entry', data: { to: door, entry, target } })
    }
    return {
      ImportDeclaration: check,
      ExportNamedDeclaration: check,
      ExportAllDeclaration: check,
      ImportExpression: check,
    }
  },
}

export default { rules: { 'import-rooms': rule } }
