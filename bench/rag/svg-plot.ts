import type { SearchRow } from './rag-report.js'

const COLORS = ['#1b6ac9', '#d1495b', '#2a9d8f', '#e9a03b', '#6a4c93', '#555555']

/**
 * A recall-vs-latency chart as SVG: one curve per tenant class and strategy over ef_search
 * (relaxed iterative scan), x = p50 latency in ms (log scale), y = recall@10.
 *
 * ### Examples
 * ```ts
 * writeFileSync('recall.svg', recallLatencySvg(report.search.rows))
 * ```
 */
export function recallLatencySvg(rows: readonly SearchRow[], title = 'recall@10 vs p50 latency (relaxed iterative scan)'): string {
  const curves = new Map<string, SearchRow[]>()
  for (const row of rows.filter((r) => r.iterativeScan === 'relaxed')) {
    const key = `${row.tenantClass} tenants, ${row.strategy}`
    curves.set(
      key,
      [...(curves.get(key) ?? []), row].sort((a, b) => a.efSearch - b.efSearch),
    )
  }
  const W = 720
  const H = 440
  const m = { left: 64, right: 210, top: 40, bottom: 52 }
  const lat = rows.map((r) => Math.max(0.01, r.latencyMs.p50))
  const minX = Math.log10(Math.min(...lat, 0.1))
  const maxX = Math.log10(Math.max(...lat, 1)) + 0.05
  const minY = Math.min(0.5, ...rows.map((r) => r.recallAt10))
  const x = (ms: number) => m.left + ((Math.log10(Math.max(0.01, ms)) - minX) / (maxX - minX || 1)) * (W - m.left - m.right)
  const y = (recall: number) => m.top + (1 - (recall - minY) / (1 - minY || 1)) * (H - m.top - m.bottom)
  const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;')
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${m.left}" y="22" font-size="14">${esc(title)}</text>`,
    `<line x1="${m.left}" y1="${H - m.bottom}" x2="${W - m.right}" y2="${H - m.bottom}" stroke="black"/>`,
    `<line x1="${m.left}" y1="${m.top}" x2="${m.left}" y2="${H - m.bottom}" stroke="black"/>`,
    `<text x="${(m.left + W - m.right) / 2}" y="${H - 12}" text-anchor="middle">p50 latency, ms (log scale)</text>`,
    `<text transform="translate(16 ${(m.top + H - m.bottom) / 2}) rotate(-90)" text-anchor="middle">recall@10</text>`,
  ]
  for (let e = Math.floor(minX); e <= Math.ceil(maxX); e++) {
    for (const f of [1, 2, 5]) {
      const v = f * 10 ** e
      if (Math.log10(v) < minX || Math.log10(v) > maxX) continue
      parts.push(
        `<line x1="${x(v)}" y1="${H - m.bottom}" x2="${x(v)}" y2="${H - m.bottom + 5}" stroke="black"/><text x="${x(v)}" y="${H - m.bottom + 18}" text-anchor="middle">${v}</text>`,
      )
    }
  }
  for (let i = 0; i <= 5; i++) {
    const v = minY + ((1 - minY) * i) / 5
    parts.push(
      `<line x1="${m.left - 5}" y1="${y(v)}" x2="${W - m.right}" y2="${y(v)}" stroke="#ddd"/><text x="${m.left - 8}" y="${y(v) + 4}" text-anchor="end">${v.toFixed(2)}</text>`,
    )
  }
  parts.push(
    `<line x1="${m.left}" y1="${y(0.98)}" x2="${W - m.right}" y2="${y(0.98)}" stroke="#999" stroke-dasharray="4 3"/><text x="${W - m.right - 4}" y="${y(0.98) - 4}" text-anchor="end" fill="#666">0.98</text>`,
  )
  let legend = 0
  for (const [name, points] of curves) {
    const color = COLORS[legend % COLORS.length]!
    parts.push(
      `<polyline fill="none" stroke="${color}" stroke-width="2" points="${points.map((p) => `${x(p.latencyMs.p50).toFixed(1)},${y(p.recallAt10).toFixed(1)}`).join(' ')}"/>`,
    )
    for (const p of points) {
      parts.push(
        `<circle cx="${x(p.latencyMs.p50).toFixed(1)}" cy="${y(p.recallAt10).toFixed(1)}" r="3.5" fill="${color}"><title>${esc(name)}: ef_search ${p.efSearch}, recall ${p.recallAt10.toFixed(3)}, ${p.latencyMs.p50.toFixed(2)} ms</title></circle>`,
      )
      parts.push(
        `<text x="${(x(p.latencyMs.p50) + 5).toFixed(1)}" y="${(y(p.recallAt10) - 5).toFixed(1)}" font-size="10" fill="${color}">${p.efSearch}</text>`,
      )
    }
    parts.push(
      `<rect x="${W - m.right + 16}" y="${m.top + legend * 20}" width="12" height="12" fill="${color}"/><text x="${W - m.right + 34}" y="${m.top + legend * 20 + 10}">${esc(name)}</text>`,
    )
    legend++
  }
  parts.push('</svg>')
  return parts.join('\n')
}
