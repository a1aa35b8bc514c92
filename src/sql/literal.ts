import { InvalidArgumentError } from '../errors.js'

/** A value {@link inlineParameters} can render: text, or a finite number. */
export type InlineValue = string | number

/**
 * The text of a PostgreSQL array literal holding `values`, each element double-quoted with `"` and
 * `\\` escaped, as array input reads them: pass it as a text value (bound, or through
 * {@link inlineParameters}) and cast it (`::date[]`).
 *
 * ### Examples
 * ```ts
 * arrayLiteral(['2025-01-01', 'a "b"']) // '{"2025-01-01","a \\"b\\""}'
 * ```
 */
export function arrayLiteral(values: readonly InlineValue[]): string {
  return `{${values.map((v) => `"${String(v).replace(/["\\]/g, (c) => `\\${c}`)}"`).join(',')}}`
}

/** Whether {@link inlineParameters} can render `value`. */
export function isInlineValue(value: unknown): value is InlineValue {
  return typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value))
}

/**
 * A SQL string constant holding exactly `value`, dollar-quoted (`$pgs0$…$pgs0$`, the tag chosen so
 * that it does not occur in the value). Dollar quoting processes no escapes: neither backslashes
 * nor quotes mean anything inside it, under either `standard_conforming_strings` setting. The
 * constant is untyped (like a bound text parameter): the context gives it its type. NUL, which
 * PostgreSQL text cannot hold and which would cut a query message short, is refused.
 *
 * ### Examples
 * ```ts
 * dollarQuote("O'Reilly \\ co") // "$pgs0$O'Reilly \\ co$pgs0$"
 * ```
 */
export function dollarQuote(value: string): string {
  if (typeof value !== 'string') throw new InvalidArgumentError(`expected a string, got ${typeof value}`)
  if (value.includes('\u0000')) throw new InvalidArgumentError('text values cannot contain NUL (\\u0000)')
  let n = 0
  // The tag's only `$` are its ends, so it can only be matched early by a value containing
  // `$pgsN` (checked): no suffix of the value can combine with the closing tag.
  while (value.includes(`$pgs${n}`)) n++
  return `$pgs${n}$${value}$pgs${n}$`
}

/**
 * `text` with every `$n` placeholder replaced by the constant of `values[n - 1]`: strings through
 * {@link dollarQuote}, numbers (finite) as quoted numeric constants. For statements pgscale wrote,
 * whose only `$` are placeholders; it is how a statement joins `SET LOCAL …` in one simple-protocol
 * message (which takes no bound parameters).
 *
 * ### Examples
 * ```ts
 * inlineParameters('select * from t where tenant_id = $1 limit $2', ['acme', 10])
 * // "select * from t where tenant_id =  $pgs0$acme$pgs0$ limit  '10'"
 * ```
 */
export function inlineParameters(text: string, values: readonly InlineValue[]): string {
  return text.replace(/\$(\d+)/g, (_, digits: string) => {
    const index = Number(digits) - 1
    if (index < 0 || index >= values.length) throw new InvalidArgumentError(`no value for placeholder $${digits}`)
    return ` ${constant(values[index]!)}`
  })
}

function constant(value: InlineValue): string {
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new InvalidArgumentError(`expected a finite number, got ${value}`)
    return `'${String(value)}'`
  }
  return dollarQuote(value)
}

/**
 * A PostgreSQL array constant's text (`{"a","b\\"c"}`) of `values`, every element double-quoted
 * with `\` and `"` escaped — the array syntax's own escapes, which apply whatever
 * `standard_conforming_strings` says. Pass it through {@link inlineParameters} (dollar-quoted) and
 * cast it (`::text[]`). NUL is refused.
 *
 * ### Examples
 * ```ts
 * arrayText(['a', 'b"c', 'd\\e']) // '{"a","b\\"c","d\\\\e"}'
 * ```
 */
export function arrayText(values: readonly (string | number)[]): string {
  let text = '{'
  for (let i = 0; i < values.length; i++) {
    const value = values[i]!
    if (typeof value === 'number') {
      if (!Number.isFinite(value)) throw new InvalidArgumentError(`expected a finite number, got ${value}`)
      text += (i === 0 ? '' : ',') + String(value)
      continue
    }
    if (value.includes('\u0000')) throw new InvalidArgumentError('text values cannot contain NUL (\\u0000)')
    text += (i === 0 ? '"' : ',"') + value.replace(/[\\"]/g, '\\$&') + '"'
  }
  return text + '}'
}
