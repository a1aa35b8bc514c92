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
