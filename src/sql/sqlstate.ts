/**
 * The SQLSTATE codes pgscale branches on, by name (PostgreSQL's Appendix A). Compare
 * `DatabaseError.sqlState` with these, never with literals or message text.
 *
 * ### Examples
 * ```ts
 * if (err instanceof DatabaseError && err.sqlState === SQLSTATE.uniqueViolation) ...
 * ```
 */
export const SQLSTATE = {
  uniqueViolation: '23505',
  invalidParameterValue: '22023',
  groupingError: '42803',
  duplicateObject: '42710',
  duplicateTable: '42P07',
  insufficientPrivilege: '42501',
  diskFull: '53100',
  outOfMemory: '53200',
} as const
