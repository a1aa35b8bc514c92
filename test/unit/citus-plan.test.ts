import { describe, expect, it } from 'vitest'
import { citusTasks, expectPlan, indexesUsed, planShape, type Plan } from '../../src/index.js'
import { planNodes } from '../../src/bench-kit.js'
import { renderCitusPlacement } from '../../bench/report/citus-placement.js'

/** A Citus router plan as EXPLAIN (FORMAT JSON) returned it on Citus 13.0.5 (trimmed to the keys that matter). */
const citusPlan = {
  Plan: {
    'Node Type': 'Custom Scan',
    'Custom Plan Provider': 'Citus Adaptive',
    'Distributed Query': {
      Job: {
        'Task Count': 1,
        Tasks: [
          {
            Node: 'host=127.0.0.1 port=37297 dbname=postgres',
            'Remote Plan': [
              [
                {
                  Plan: {
                    'Node Type': 'Sort',
                    Plans: [
                      {
                        'Node Type': 'Limit',
                        Plans: [
                          {
                            'Node Type': 'Index Scan',
                            'Index Name': 'dist_chunks_tenant_822b33ad87c148a0_102008',
                            'Relation Name': 'dist_chunks_102008',
                          },
                        ],
                      },
                    ],
                  },
                },
              ],
            ],
          },
        ],
      },
    },
  },
  sql: 'select …',
} as unknown as Plan

describe('plans on Citus', () => {
  it('look inside the distributed plan: the shard’s index scan, named as on the coordinator', () => {
    expect(planNodes(citusPlan).map((n) => n['Node Type'])).toEqual(['Custom Scan', 'Sort', 'Limit', 'Index Scan'])
    expect(indexesUsed(citusPlan)).toEqual(['dist_chunks_tenant_822b33ad87c148a0'])
    expect(() => expectPlan(citusPlan).toUse('dist_chunks_tenant_822b33ad87c148a0')).not.toThrow()
    expect(() => expectPlan(citusPlan).toUse('dist_chunks_pkey')).toThrow(/expected the plan to use index dist_chunks_pkey/)
  })

  it('a plan with no distributed part is walked as before, names untouched', () => {
    const plain = { Plan: { 'Node Type': 'Index Scan', 'Index Name': 'chunks_tenant_1234567890123456' }, sql: '' } as unknown as Plan
    expect(indexesUsed(plain)).toEqual(['chunks_tenant_1234567890123456'])
    expect(citusTasks(plain)).toBeUndefined()
    expect(planShape(plain)).toBe('Index Scan [chunks_tenant_1234567890123456]')
  })

  it('citusTasks counts the tasks and names the worker; planShape shows both plans', () => {
    expect(citusTasks(citusPlan)).toEqual({ taskCount: 1, nodes: ['127.0.0.1:37297'] })
    expect(planShape(citusPlan)).toBe(
      'Custom Scan (Citus Adaptive, 1 task) > remote: Sort > Limit > Index Scan [dist_chunks_tenant_822b33ad87c148a0 on dist_chunks]',
    )
    // A distributed scan under a coordinator node: the task count is the scan's, not its parent's.
    const nested = { Plan: { 'Node Type': 'Limit', Plans: [citusPlan.Plan] }, sql: '' } as unknown as Plan
    expect(planShape(nested)).toMatch(/^Limit > Custom Scan \(Citus Adaptive, 1 task\) > remote: Sort/)
    expect(citusTasks(nested)?.taskCount).toBe(1)
  })
})

describe('renderCitusPlacement', () => {
  it('prints the table, the workers and, per tenant, its shard, worker, task count and plan', () => {
    const lines = renderCitusPlacement({
      table: 'chunks',
      shards: 32,
      workers: ['worker 1 (127.0.0.1:5433)', 'worker 2 (127.0.0.1:5434)'],
      tenants: [
        { label: 'large', tenant: 't1', table: 'chunks', shardId: 102008, worker: 'worker 2 (127.0.0.1:5434)', tasks: 1, plan: 'P' },
      ],
    })
    expect(lines).toEqual([
      'Citus: chunks in 32 shards on 2 node(s): worker 1 (127.0.0.1:5433), worker 2 (127.0.0.1:5434)',
      '  large  tenant t1: shard 102008 of chunks on worker 2 (127.0.0.1:5434), 1 task',
      '    P',
    ])
  })
})
