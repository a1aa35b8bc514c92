// The regression gate: the hot paths (search, filtered search, refreshAt, replica routing) of the
// base commit and of this checkout, measured side by side in interleaved blocks as CPU time of each
// side's Node process per call; exits 1 when a median ratio head/base exceeds the bound (1.10), 0
// when it passes or when there is no base commit (said so), 2 when it could not run.
// docs/performance.md, "The regression gate". CI:
//
//   node scripts/perf-gate.mjs                 # base: $PGSCALE_GATE_BASE, else HEAD^ (or the merge base with origin/main)
//   node scripts/perf-gate.mjs --base HEAD     # the same commit on both sides: must pass
import { spawnSync } from 'node:child_process'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const run = spawnSync(process.execPath, ['--import', 'tsx', join(root, 'bench', 'perf-gate', 'run-gate.ts'), ...process.argv.slice(2)], {
  stdio: 'inherit',
  cwd: root,
})
process.exit(run.status ?? 2)
