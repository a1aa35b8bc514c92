import { InvalidArgumentError } from '../errors.js'

const LSN = /^([0-9A-F]{1,8})\/([0-9A-F]{1,8})$/i
const TOKEN = /^pgscale:wal:([0-9A-F]{1,8}\/[0-9A-F]{1,8})$/i

/**
 * A WAL position (`pg_lsn`, `16/B374D848`) as a number that compares: 64 bits in a bigint.
 *
 * ### Examples
 * ```ts
 * parseLsn('16/B374D848') > parseLsn('16/B374D800') // true
 * ```
 */
export function parseLsn(text: string): bigint {
  const match = LSN.exec(text)
  if (!match) throw new InvalidArgumentError(`not a WAL position: ${JSON.stringify(text)}`)
  return (BigInt(`0x${match[1]}`) << 32n) | BigInt(`0x${match[2]}`)
}

/** The text form of a WAL position. */
export function formatLsn(lsn: bigint): string {
  return `${(lsn >> 32n).toString(16).toUpperCase()}/${(lsn & 0xffffffffn).toString(16).toUpperCase()}`
}

/**
 * A consistency token: the primary's WAL position after a write, as text an app can carry across
 * requests and processes (a session cookie, a header). A read given it is served by a replica
 * only once that replica has replayed past it.
 *
 * ### Examples
 * ```ts
 * const token = toToken(parseLsn('16/B374D848')) // 'pgscale:wal:16/B374D848'
 * ```
 */
export function toToken(lsn: bigint): string {
  return `pgscale:wal:${formatLsn(lsn)}`
}

/**
 * The WAL position a token names; a typed error for anything else.
 *
 * ### Examples
 * ```ts
 * fromToken('pgscale:wal:16/B374D848') // 0x16b374d848n
 * ```
 */
export function fromToken(token: unknown): bigint {
  const match = typeof token === 'string' ? TOKEN.exec(token) : null
  if (!match) throw new InvalidArgumentError(`not a consistency token: ${JSON.stringify(token)} (expected pgscale:wal:<lsn>)`)
  return parseLsn(match[1]!)
}
