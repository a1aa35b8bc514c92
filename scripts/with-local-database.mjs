// Runs a command with DATABASE_URL set to a throwaway native PostgreSQL + pgvector cluster (the
// `local` provider, from the built package in dist/), removed when the command ends; exits with the
// command's status. CI runs the README's app this way:
//
//   node scripts/with-local-database.mjs npx tsx examples/readme-app.ts
import { spawnSync } from 'node:child_process'
import { provision } from '../dist/src/index.js'

const [command, ...args] = process.argv.slice(2)
if (!command) {
  console.error('usage: node scripts/with-local-database.mjs COMMAND [ARGS...]')
  process.exit(2)
}
const server = await provision({ provider: 'local' })
let status = 1
try {
  console.error(
    `[with-local-database] PostgreSQL ${server.info.serverVersion}, pgvector ${server.info.pgvectorVersion}: ${command} ${args.join(' ')}`,
  )
  const run = spawnSync(command, args, { stdio: 'inherit', env: { ...process.env, DATABASE_URL: server.url } })
  status = run.status ?? 1
} finally {
  await server.stop()
}
process.exit(status)
