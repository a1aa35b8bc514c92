/**
 * How a stored measure combines when `read({ groupBy })` folds groups together, or undefined when
 * no combination is known to be right. Only a whole expression that is one `sum(...)`,
 * `count(...)` (not `count(distinct ...)`), `min(...)` or `max(...)`, optionally with a
 * `FILTER (WHERE ...)` clause, qualifies: `count(distinct user_id)` over two categories counts a
 * user twice, `sum(a)/count(*)` averages averages, `max(a)-min(a)` subtracts the wrong pair.
 *
 * ### Examples
 * ```ts
 * combinerOf('count(*) filter (where status = \'paid\')') // 'sum'
 * combinerOf('count(distinct user_id)') // undefined
 * combinerOf('sum(a) / count(*)') // undefined
 * ```
 */
export function combinerOf(expression: string): 'sum' | 'min' | 'max' | undefined {
  const head = /^\s*(sum|count|min|max)\s*\(/i.exec(expression)
  if (!head) return undefined
  const open = head[0].length - 1
  const close = matchingParen(expression, open)
  if (close === undefined) return undefined
  if (/^\s*distinct\b/i.test(expression.slice(open + 1, close))) return undefined
  let rest = expression.slice(close + 1)
  const filter = /^\s*filter\s*\(/i.exec(rest)
  if (filter) {
    const filterClose = matchingParen(rest, filter[0].length - 1)
    if (filterClose === undefined || !/^\s*where\b/i.test(rest.slice(filter[0].length))) return undefined
    rest = rest.slice(filterClose + 1)
  }
  if (rest.trim() !== '') return undefined
  const name = head[1]!.toLowerCase()
  return name === 'count' ? 'sum' : (name as 'sum' | 'min' | 'max')
}

/** The index of the `)` closing the `(` at `open`, skipping quoted strings and identifiers. */
function matchingParen(text: string, open: number): number | undefined {
  let depth = 0
  for (let i = open; i < text.length; i++) {
    const c = text[i]
    if (c === "'" || c === '"') {
      const end = text.indexOf(c, i + 1)
      if (end === -1) return undefined
      i = end
    } else if (c === '(') depth++
    else if (c === ')' && --depth === 0) return i
  }
  return undefined
}
