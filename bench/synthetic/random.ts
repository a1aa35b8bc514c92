import { seededRandom, type Random } from '../../src/bench-kit.js'

export { seededRandom, type Random }

/** A random unit vector of `dim` dimensions. */
export function randomUnitVector(random: Random, dim: number): Float32Array {
  const v = new Float32Array(dim)
  for (let i = 0; i < dim; i++) v[i] = random.gaussian()
  return normalize(v)
}

/** Scales `v` to length 1 in place and returns it. */
export function normalize(v: Float32Array): Float32Array {
  let norm = 0
  for (let i = 0; i < v.length; i++) norm += v[i]! * v[i]!
  norm = Math.sqrt(norm) || 1
  for (let i = 0; i < v.length; i++) v[i]! /= norm
  return v
}
