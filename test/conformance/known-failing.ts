import { CaughtUp, ReplayControl } from './commands.js'
import { RefreshAt, RollupRead, SourceInsert } from './rollup-commands.js'
import { BulkIngest, type Cmd } from './writes.js'
import { KilledWrite } from './commands.js'

/**
 * Mode and command combinations the harness shows broken on main, each a defect of issue 41 that
 * is being fixed in `src/`. The main property of a mode leaves these commands out; each entry runs
 * as an `it.fails` case with the command added. When a fix lands, its case starts failing ("expected
 * to fail"): delete its line here, and the command joins the mode's main property.
 */
export interface KnownFailure {
  mode: string
  command: string
  defect: string
  /** The commands its case runs with it (default: the mode's): a focused set finds it in a few sequences. */
  focus?: string[]
  /** Sequences its case runs (default: the mode's, at least 20). */
  runs?: number
  /**
   * A fixed sequence its case runs instead of random ones: where the random search needs more
   * sequences than CI's budget to line the commands up (one tenant, one bucket, replay paused
   * between them). The command still joins the mode's random property once fixed.
   */
  sequence?: () => Cmd[]
}

export const KNOWN_FAILING: KnownFailure[] = [
  // Empty since the fixes of issue 41 landed (0c1a95c and the isolation work). Found by this harness
  // on 93839e9 before them: replicas + store.bulkIngest (#1), replicas + transactionWrite (#2/#3),
  // replicas + refreshAt (#4, see FIXED_SEQUENCES), rls + foreignDirtyAppend (#6). An entry looks like
  // { mode: 'rls', command: 'foreignDirtyAppend', defect: 'issue 41 #6: …', focus: ['sourceInsert'] }.
]

/**
 * Fixed sequences that reproduced a defect before its fix, kept as regression cases of their mode
 * (where random sequences need more than CI's budget to line the commands up).
 */
export const FIXED_SEQUENCES: Array<{ mode: string; name: string; sequence: () => Cmd[] }> = [
  {
    mode: 'replicas',
    // Shrunk from a long run (seed -1366742973): the harness's own catch-up waited for WAL an idle
    // primary had inserted and not flushed; it now flushes first. pgscale's routing is safe there
    // (a read that finds no standby past its position reads the primary after waitMs).
    name: 'a killed bulk load, then the standbys catch up',
    sequence: () => [
      new KilledWrite(
        new BulkIngest('tenant.bulkIngest', [
          {
            tenantId: 'globex',
            documentId: 'd2',
            chunkIndex: 0,
            content: 'alpha alpha',
            embedding: [1, -2, 1, 0],
            metadata: { kind: 'a', n: 0, tags: [], flag: false },
          } as never,
        ]),
      ),
      new CaughtUp(),
    ],
  },
  {
    mode: 'replicas',
    // A source row replayed, both standbys paused, the refresh, a plain read of that bucket: 1,050
    // random commands of a focused set did not line these up; the sequence does (stale on 93839e9).
    name: 'issue 41 #4: a refresh, then a plain read through paused standbys, sees the refresh',
    sequence: () => [
      new SourceInsert('acme', '2025-01-10T12:00:00Z', 'food', 5),
      new CaughtUp(),
      new ReplayControl('all', true),
      new RefreshAt('acme', '2025-01-31T18:29:59Z'),
      new RollupRead('acme', '2025-01', '2025-02', false, false),
    ],
  },
]

export function knownFailing(mode: string): KnownFailure[] {
  return KNOWN_FAILING.filter((f) => f.mode === mode)
}
