/** The closing lines of a bench's human report: a bigger run, where the report is, what each figure means. */
export interface WhatNext {
  /** The command for the next, bigger run. */
  biggerRun: string
  /** Where this run's JSON report went (`--json`), if anywhere. */
  reportPath?: string
  /** The doc section that explains each figure (repository path with its anchor). */
  glossary: string
}

/**
 * Renders the "what next" block that ends a bench's human report.
 *
 * ### Examples
 * ```ts
 * console.log(renderWhatNext({ biggerRun: 'npx rag-bench --chunks 200000 --db local', glossary: 'docs/rag-bench.md#glossary' }))
 * ```
 */
export function renderWhatNext(next: WhatNext): string {
  const report =
    next.reportPath && next.reportPath !== '-'
      ? `${next.reportPath} (compare two runs: npx ${next.biggerRun.split(' ')[1]} compare base.json ${next.reportPath})`
      : 'not written: add --json FILE to keep it'
  return [
    'what next',
    `  a bigger run:       ${next.biggerRun}`,
    `  this run's report:  ${report}`,
    `  what each figure means: ${next.glossary} (in the pgscale repository)`,
  ].join('\n')
}

/**
 * The next size up for a bench run: ten times the chunks (or rows), on a server rather than PGlite,
 * keeping the options that shape the data.
 *
 * ### Examples
 * ```ts
 * biggerRunCommand('rag-bench', '--chunks', 20_000, 'embedded') // 'npx rag-bench --chunks 200000 --db local'
 * ```
 */
export function biggerRunCommand(bench: string, sizeOption: string, size: number, provider: string, extra: readonly string[] = []): string {
  const where = provider === 'embedded' ? ['--db', 'local'] : provider === 'url' ? ['--pg', '$DATABASE_URL'] : ['--db', provider]
  return ['npx', bench, sizeOption, String(size * 10), ...extra, ...where].join(' ')
}
