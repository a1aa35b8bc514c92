import { CaughtUp, ReplayControl } from './commands.js'
import { FleetRead, RawFleetRead, RefreshAt, RefreshDirty, RollupRead, SourceDelete, SourceInsert } from './rollup-commands.js'
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
/**
 * issue #43, the fleet level in every mode the rollup commands run in: a bucket refreshed again
 * after a write (the fleet's delta must subtract the rows it replaced), another tenant's bucket of
 * the same month, one emptied, and fleet reads between — the random property lines these up only
 * in longer runs (a delta that added the replaced rows instead was found by 80 sequences, not by 12).
 * Under rls the runtime role's raw SQL reads the fleet table too (no row, tenant set or not).
 */
function fleetSequence(rls: boolean): Cmd[] {
  return [
    new SourceInsert('acme', '2025-01-10T12:00:00Z', 'food', 5),
    new RefreshAt('acme', '2025-01-10T12:00:00Z'),
    new SourceInsert('acme', '2025-01-31T18:29:59Z', 'food', 3),
    new SourceInsert('globex', '2025-01-31T18:29:59Z', 'rent', 9),
    new RefreshDirty(),
    new FleetRead('2025-01', '2025-02', false, false),
    ...(rls ? [new RawFleetRead('acme'), new RawFleetRead(undefined)] : []),
    new SourceDelete('globex', 0),
    new RefreshAt('globex', '2025-01-20T00:00:00Z'),
    new FleetRead('2025-01', '2025-01', true, false),
    new FleetRead('2025-01', '2025-03', false, true),
  ]
}

export const FIXED_SEQUENCES: Array<{ mode: string; name: string; sequence: () => Cmd[] }> = [
  ...['plain', 'transaction', 'rls', 'pgbouncer'].map((mode) => ({
    mode,
    name: 'issue 43: buckets refreshed again, emptied, and the fleet level read between',
    sequence: () => fleetSequence(mode === 'rls'),
  })),
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
  {
    mode: 'replicas',
    // issue #43: the fleet level through a ReplicaSet with read-your-writes — a refresh and a drain
    // while both standbys are paused, then fleet reads (they must see both: the primary answers).
    name: 'issue 43: a refresh and a drain, then fleet reads through paused standbys, see them',
    sequence: () => [
      new SourceInsert('acme', '2025-01-10T12:00:00Z', 'food', 5),
      new SourceInsert('globex', '2025-01-31T18:30:00Z', 'food', 7),
      new RefreshDirty(),
      new CaughtUp(),
      new FleetRead('2025-01', '2025-02', false, false),
      new ReplayControl('all', true),
      new SourceInsert('ACME', '2025-01-10T12:00:00Z', 'food', 11),
      new RefreshAt('ACME', '2025-01-10T12:00:00Z'),
      new FleetRead('2025-01', '2025-01', true, false),
      new SourceDelete('globex', 0),
      new RefreshDirty(),
      new FleetRead('2025-01', '2025-03', false, true),
    ],
  },
]

export function knownFailing(mode: string): KnownFailure[] {
  return KNOWN_FAILING.filter((f) => f.mode === mode)
}
