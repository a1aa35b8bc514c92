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
