/**
 * `"schema"."name"` or `"name"` from names already validated as plain identifiers
 * (`assertIdentifier`), which cannot hold a quote: safe to interpolate.
 *
 * ### Examples
 * ```ts
 * quoteQualified('rag', 'chunks') // '"rag"."chunks"'
 * quoteQualified(undefined, 'chunks') // '"chunks"'
 * ```
 */
export function quoteQualified(schema: string | undefined, name: string): string {
  return schema ? `"${schema}"."${name}"` : `"${name}"`
}
