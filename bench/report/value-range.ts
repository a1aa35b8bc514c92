/**
 * A range of values as a reader wants it: `1,000–5,000` when the ends differ, `1,000` when they
 * print the same (a class whose tenants all have 1,000 chunks is not "1,000–1,000").
 *
 * ### Examples
 * ```ts
 * valueRange(1000, 5000, (n) => n.toLocaleString('en-US')) // '1,000–5,000'
 * valueRange(1000, 1000, (n) => n.toLocaleString('en-US')) // '1,000'
 * valueRange(2.04, 2.01, (n) => n.toFixed(1))              // '2.0'
 * ```
 */
export function valueRange(min: number, max: number, format: (n: number) => string): string {
  const low = format(Math.min(min, max))
  const high = format(Math.max(min, max))
  return low === high ? low : `${low}–${high}`
}
