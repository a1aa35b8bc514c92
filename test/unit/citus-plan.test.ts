import { describe, expect, it } from 'vitest'
import { expectPlan, indexesUsed, type Plan } from '../../src/index.js'
import { planNodes } from '../../src/bench-kit.js'

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
  })
})
