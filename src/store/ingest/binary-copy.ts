/**
 * PostgreSQL's binary COPY format, written into ~1 MiB chunks. Binary COPY sends float4s as
 * they are; the text format spends most of its time turning floats into decimal strings.
 */
import { halfBits } from '../config/index.js'

const SIGNATURE = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1')
const CHUNK_BYTES = 1 << 18

/** Appends binary COPY rows to a buffer; `take()` hands out what is complete. */
export class BinaryCopyWriter {
  #buf: Buffer
  #view: DataView
  #pos = 0

  constructor(initialBytes = CHUNK_BYTES) {
    this.#buf = Buffer.allocUnsafe(initialBytes)
    this.#view = new DataView(this.#buf.buffer, this.#buf.byteOffset, this.#buf.byteLength)
  }

  /** Bytes written and not yet taken. */
  get size(): number {
    return this.#pos
  }

  /** The 19-byte header: signature, flags, extension length. */
  header(): this {
    this.#ensure(SIGNATURE.length + 8)
    SIGNATURE.copy(this.#buf, this.#pos)
    this.#pos += SIGNATURE.length
    this.#view.setInt32(this.#pos, 0)
    this.#view.setInt32(this.#pos + 4, 0)
    this.#pos += 8
    return this
  }

  /** Starts a row of `fields` fields. */
  row(fields: number): this {
    this.#ensure(2)
    this.#view.setInt16(this.#pos, fields)
    this.#pos += 2
    return this
  }

  /** A `text` (or `varchar`) field. */
  text(value: string): this {
    const bytes = Buffer.byteLength(value, 'utf8')
    this.#ensure(4 + bytes)
    this.#view.setInt32(this.#pos, bytes)
    this.#buf.write(value, this.#pos + 4, bytes, 'utf8')
    this.#pos += 4 + bytes
    return this
  }

  /** An `int4` field. */
  int4(value: number): this {
    this.#ensure(8)
    this.#view.setInt32(this.#pos, 4)
    this.#view.setInt32(this.#pos + 4, value)
    this.#pos += 8
    return this
  }

  /** A `jsonb` field: version byte 1, then the JSON text. */
  jsonb(json: string): this {
    const bytes = Buffer.byteLength(json, 'utf8')
    this.#ensure(5 + bytes)
    this.#view.setInt32(this.#pos, bytes + 1)
    this.#buf[this.#pos + 4] = 1
    this.#buf.write(json, this.#pos + 5, bytes, 'utf8')
    this.#pos += 5 + bytes
    return this
  }

  /** A pgvector `vector` field: int16 dimensions, int16 unused, float4 values, big-endian. */
  vector(values: ArrayLike<number>): this {
    const n = values.length
    let p = this.#vectorHeader(n, 4)
    const view = this.#view
    for (let i = 0; i < n; i++, p += 4) view.setFloat32(p, values[i]!)
    this.#pos = p
    return this
  }

  /** A pgvector `halfvec` field: int16 dimensions, int16 unused, IEEE half-precision values, big-endian. */
  halfvec(values: ArrayLike<number>): this {
    const n = values.length
    let p = this.#vectorHeader(n, 2)
    const view = this.#view
    for (let i = 0; i < n; i++, p += 2) view.setUint16(p, halfBits(values[i]!))
    this.#pos = p
    return this
  }

  /** Room for a vector field of `n` values of `bytes` each, its length and header written; returns where the values go. */
  #vectorHeader(n: number, bytes: number): number {
    this.#ensure(8 + bytes * n)
    const p = this.#pos
    this.#view.setInt32(p, 4 + bytes * n)
    this.#view.setInt16(p + 4, n)
    this.#view.setInt16(p + 6, 0)
    return p + 8
  }

  /** The trailer that ends the data. */
  trailer(): this {
    this.#ensure(2)
    this.#view.setInt16(this.#pos, -1)
    this.#pos += 2
    return this
  }

  /** Returns the bytes written so far (a copy) and starts over. */
  take(): Buffer {
    const out = Buffer.from(this.#buf.subarray(0, this.#pos))
    this.#pos = 0
    return out
  }

  #ensure(bytes: number): void {
    if (this.#pos + bytes <= this.#buf.length) return
    const next = Buffer.allocUnsafe(Math.max(this.#buf.length * 2, this.#pos + bytes))
    this.#buf.copy(next, 0, 0, this.#pos)
    this.#buf = next
    this.#view = new DataView(next.buffer, next.byteOffset, next.byteLength)
  }
}

/** True when a writer holds enough to be worth sending as one chunk. */
export function chunkFull(writer: BinaryCopyWriter): boolean {
  return writer.size >= CHUNK_BYTES - 16 * 1024
}
