import { describe, expect, it } from 'vitest'
import { halfBits, resolveVectorOptions, seededRandom, vectorSql } from '../../src/bench-kit.js'

/** The value of IEEE half-precision bits. */
function fromHalf(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1
  const exponent = (bits >> 10) & 0x1f
  const mantissa = bits & 0x3ff
  if (exponent === 0) return sign * mantissa * 2 ** -24
  if (exponent === 0x1f) return mantissa ? Number.NaN : sign * Number.POSITIVE_INFINITY
  return sign * (1 + mantissa / 1024) * 2 ** (exponent - 15)
}

describe('halfBits: float → IEEE half, as pgvector stores halfvec', () => {
  it('known values', () => {
    expect(halfBits(1)).toBe(0x3c00)
    expect(halfBits(-2)).toBe(0xc000)
    expect(halfBits(65504)).toBe(0x7bff)
    expect(halfBits(0.1)).toBe(0x2e66)
    expect(halfBits(2 ** -24)).toBe(0x0001) // the smallest subnormal
    expect(halfBits(2 ** -26)).toBe(0) // below half of it
    expect(halfBits(0)).toBe(0)
    expect(halfBits(-0)).toBe(0x8000)
    expect(halfBits(1 + 2 ** -11)).toBe(0x3c00) // a tie: to even
    expect(halfBits(1 + 3 * 2 ** -11)).toBe(0x3c02) // a tie: to even, upwards
  })

  it('every result is the nearest half to the float4 of the input (ties to even), over 100,000 seeded values', () => {
    const random = seededRandom('half')
    for (let i = 0; i < 100_000; i++) {
      const magnitude = 2 ** (random.next() * 40 - 24)
      const x = Math.fround((random.next() < 0.5 ? -1 : 1) * Math.min(65504, magnitude))
      const h = halfBits(x)
      const got = fromHalf(h)
      for (const neighbour of [h - 1, h + 1]) {
        if ((neighbour & 0x7fff) >= 0x7c00 || neighbour < 0 || (neighbour & 0x8000) !== (h & 0x8000)) continue
        const other = fromHalf(neighbour)
        const d = Math.abs(x - got)
        const e = Math.abs(x - other)
        expect(d <= e).toBe(true)
        if (d === e) expect(h & 1).toBe(0)
      }
    }
  })
})

describe('vectorSql: one place for the type, its opclass and the index expression', () => {
  it('renders each combination', () => {
    expect(vectorSql('vector', 'none', 'cosine', 384)).toMatchObject({
      column: 'vector(384)',
      indexExpression: 'embedding',
      opclass: 'vector_cosine_ops',
      indexOperator: '<=>',
      maxIndexDimensions: 2000,
    })
    expect(vectorSql('halfvec', 'none', 'l2', 3000)).toMatchObject({
      column: 'halfvec(3000)',
      opclass: 'halfvec_l2_ops',
      maxIndexDimensions: 4000,
    })
    const half = vectorSql('vector', 'halfvec', 'inner_product', 384)
    expect(half).toMatchObject({ indexExpression: '(embedding::halfvec(384))', opclass: 'halfvec_ip_ops', indexOperator: '<#>' })
    expect(half.indexQuery('$2')).toBe('$2::halfvec(384)')
    const bits = vectorSql('halfvec', 'binary', 'cosine', 384)
    expect(bits).toMatchObject({
      indexExpression: '(binary_quantize(embedding)::bit(384))',
      opclass: 'bit_hamming_ops',
      indexOperator: '<~>',
    })
    expect(bits.indexQuery('$2')).toBe('binary_quantize($2::halfvec(384))::bit(384)')
    expect(bits.maxIndexDimensions).toBe(64000)
  })

  it('resolves defaults and refuses what pgvector does not have', () => {
    expect(resolveVectorOptions(undefined, undefined)).toEqual({ vectorType: 'vector', quantization: 'none', rerank: 1 })
    expect(resolveVectorOptions('vector', { quantization: 'binary' })).toEqual({ vectorType: 'vector', quantization: 'binary', rerank: 8 })
    expect(() => resolveVectorOptions('bit', undefined)).toThrow(/vectorType/)
    expect(() => resolveVectorOptions('vector', { quantization: 'int8' })).toThrow(/quantization/)
    expect(() => resolveVectorOptions('vector', { rerank: 101 })).toThrow(/rerank/)
  })
})
