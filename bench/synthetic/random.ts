import seedrandom from 'seedrandom'

/** A seeded random source: same seed, same numbers, on every machine. */
export interface Random {
  /** Uniform in [0, 1). */
  next(): number
  /** Standard normal (Box-Muller). */
  gaussian(): number
  /** Integer in [0, n). */
  int(n: number): number
}

/**
 * A seeded random source (seedrandom's ARC4-based PRNG).
 *
 * ### Examples
 * ```ts
 * const r = seededRandom('42:tenant-7'); r.gaussian()
 * ```
 */
export function seededRandom(seed: string): Random {
  const prng = seedrandom(seed)
  let spare: number | undefined
  return {
    next: () => prng(),
    int: (n) => Math.floor(prng() * n),
    gaussian() {
      if (spare !== undefined) {
        const s = spare
        spare = undefined
        return s
      }
      let u = 0
      while (u === 0) u = prng()
      const v = prng()
      const radius = Math.sqrt(-2 * Math.log(u))
      spare = radius * Math.sin(2 * Math.PI * v)
      return radius * Math.cos(2 * Math.PI * v)
    },
  }
}

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
