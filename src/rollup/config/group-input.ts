import { InvalidArgumentError } from '../../errors.js'
import { assertIdentifier } from '../../sql/identifier.js'

/**
 * The group columns a read keeps, checked before anything is sent: `undefined` keeps every group;
 * otherwise an array of distinct group columns of the rollup table (`[]`: none). A string, a
 * repeated name or a column that is not a group is an `InvalidArgumentError` naming it.
 *
 * ### Examples
 * ```ts
 * keptGroups(['category'], ['category', 'status'], 'read') // ['category']
 * keptGroups('category', ['category'], 'readAcross') // throws InvalidArgumentError
 * ```
 */
export function keptGroups(groupBy: unknown, allGroups: readonly string[], method: string): string[] {
  if (groupBy === undefined) return [...allGroups]
  if (!Array.isArray(groupBy))
    throw new InvalidArgumentError(`${method}: groupBy must be an array of group column names ([] for none), got ${describe(groupBy)}`)
  const keep = groupBy.map((g: unknown) => assertIdentifier(g as string, `${method} groupBy column`))
  const unknown = keep.filter((g) => !allGroups.includes(g))
  if (unknown.length)
    throw new InvalidArgumentError(`${method}: ${unknown.join(', ')} is not a group column (${allGroups.join(', ') || 'none'})`)
  if (new Set(keep).size !== keep.length) throw new InvalidArgumentError(`${method}: groupBy names a column twice: ${keep.join(', ')}`)
  return keep
}

function describe(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value)
  } catch {
    return String(value)
  }
}
