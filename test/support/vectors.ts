/**
 * A deterministic `dim`-dimensional vector: mostly axis `axis`, a little (`tilt`) of `axis + 1`.
 *
 * ### Examples
 * ```ts
 * axisVector(8, 3, 0.1) // [0, 0, 0, 1, 0.1, 0, 0, 0]
 * ```
 */
export function axisVector(dim: number, axis: number, tilt = 0): number[] {
  const v = new Array<number>(dim).fill(0)
  v[axis % dim] = 1
  v[(axis + 1) % dim] = tilt
  return v
}

/**
 * Cosine similarity in doubles: the reference the tests compare the server's and the frameworks'
 * distances with (cosine distance is `1 -` it).
 *
 * ### Examples
 * ```ts
 * cosineSimilarity([1, 0], [0, 1]) // 0
 * ```
 */
export function cosineSimilarity(a: readonly number[], b: readonly number[]): number {
  let dot = 0
  let na = 0
  let nb = 0
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * b[i]!
    na += a[i]! * a[i]!
    nb += b[i]! * b[i]!
  }
  return dot / Math.sqrt(na * nb)
}
