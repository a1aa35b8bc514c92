/**
 * A hybrid search's text as `websearch_to_tsquery` reads it, without the chains of negations that
 * overflow its parser: every `-` that starts a word (at the start or after a space, as in `- - foo`
 * or a line of `-----` pasted from a document) is a NOT, and more than 32 of them in a row fail
 * the whole statement ("tsquery stack too small"). A run of three or more such dashes (with the
 * spaces between them) becomes `-` when it holds an odd number of them and `--` when even — the
 * same query (`!!!foo` is `!foo`; two are kept, not none, because a negated `or` is a word, not the
 * operator), which the server can parse. Dashes inside a word (`e-mail`, `x--y`) are left alone.
 * Checked against the server on seeded random texts (test/store/web-search-text.test.ts).
 *
 * ### Examples
 * ```ts
 * webSearchText('install ---- the package') // 'install -- the package'
 * webSearchText('cats -dogs')                 // 'cats -dogs'
 * ```
 */
export function webSearchText(text: string): string {
  return text.replace(/(^|[^\p{L}\p{N}-])((?:-+\s*)*-+)(\s*)/gu, (match: string, before: string, run: string, after: string) => {
    const dashes = run.replace(/[^-]/g, '').length
    if (dashes < 3) return match
    return `${before}${dashes % 2 === 1 ? '-' : '--'}${after}`
  })
}
