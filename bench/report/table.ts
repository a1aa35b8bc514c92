/**
 * Renders rows as an aligned plain-text table (numbers right-aligned).
 *
 * ### Examples
 * ```ts
 * console.log(renderTable(['path', 'rows/s'], [['COPY', '101,657']]))
 * ```
 */
export function renderTable(headers: readonly string[], rows: ReadonlyArray<readonly string[]>): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)))
  const numeric = headers.map((_, i) => rows.length > 0 && rows.every((r) => /^[-+]?[\d,.]+[×%x]?$|^—$/.test(r[i] ?? '')))
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (numeric[i] ? c.padStart(widths[i]!) : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd()
  return [line(headers), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n')
}
