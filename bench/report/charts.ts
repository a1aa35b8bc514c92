import type { TopLevelSpec } from 'vega-lite'

/** `--plot` needs vega and vega-lite, optional peer dependencies of pgscale. */
export class ChartLibraryMissingError extends Error {
  readonly exitCode = 2
}

/**
 * Renders a Vega-Lite spec to SVG in Node (no browser, no canvas): compiled by vega-lite, drawn by
 * vega's SVG renderer. The fonts are the viewer's; text widths are vega's estimates.
 *
 * ### Examples
 * ```ts
 * writeFileSync('chart.svg', await renderChart({ data: { values: rows }, mark: 'line', encoding: { x: { field: 'x' }, y: { field: 'y' } } }))
 * ```
 */
export async function renderChart(spec: TopLevelSpec): Promise<string> {
  const [vega, vegaLite] = await chartLibrary()
  const compiled = vegaLite.compile({ background: 'white', config: CONFIG, ...spec } as TopLevelSpec, {
    logger: vega.logger(vega.None),
  }).spec
  const view = new vega.View(vega.parse(compiled), { renderer: 'none' })
  try {
    return await view.toSVG()
  } finally {
    view.finalize()
  }
}

/**
 * Loads vega and vega-lite, or throws {@link ChartLibraryMissingError} naming the install command.
 * CLIs call it before a long run when `--plot` is given, so a missing library fails fast.
 *
 * ### Examples
 * ```ts
 * if (options.plot) await chartLibrary()
 * ```
 */
export async function chartLibrary(): Promise<[typeof import('vega'), typeof import('vega-lite')]> {
  try {
    return await Promise.all([import('vega'), import('vega-lite')])
  } catch (err) {
    const code = (err as { code?: string }).code
    if (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') {
      throw new ChartLibraryMissingError('--plot draws with Vega-Lite, an optional dependency: npm install vega@~6.4.0 vega-lite@~6.5.0')
    }
    throw err
  }
}

const CONFIG = {
  font: 'sans-serif',
  title: { fontSize: 14, anchor: 'start' as const, subtitleColor: '#555' },
  axis: { labelFontSize: 11, titleFontSize: 12, grid: true, gridColor: '#e6e6e6', labelLimit: 360 },
  legend: { labelFontSize: 11, titleFontSize: 12, orient: 'bottom' as const, direction: 'vertical' as const, labelLimit: 400 },
  view: { stroke: '#bbb' },
}
