/**
 * Rows as sorted canonical JSON, for comparing a rollup's reads with a truth computed another way:
 * keys sorted, numbers and numeric text alike (trailing zeros dropped, `-0` as `0`), ids as text.
 * With `months`, a month given as a `Date` or as `YYYY-MM-01` text reads as `YYYY-MM` (for a truth
 * from SQL beside a rollup read); without it, a month's spelling counts.
 *
 * ### Examples
 * ```ts
 * expect(canonicalRows(await rollup.readAcross(db, range))).toEqual(canonicalRows(truth))
 * ```
 */
export function canonicalRows(rows: ReadonlyArray<Record<string, unknown>>, options: { months?: boolean } = {}): string[] {
  const value = (v: unknown): string | null => {
    if (v === null || v === undefined) return null
    if (options.months && v instanceof Date) return v.toISOString().slice(0, 7)
    const text = String(v)
    if (options.months && /^\d{4}-\d{2}-01$/.test(text)) return text.slice(0, 7)
    if (!/^-?\d+(\.\d+)?$/.test(text)) return text
    return text.includes('.') ? text.replace(/\.?0+$/, '') : text.replace(/^-0$/, '0')
  }
  return rows
    .map((row) =>
      JSON.stringify(
        Object.keys(row)
          .sort()
          .map((k) => [k, value(row[k])]),
      ),
    )
    .sort()
}
