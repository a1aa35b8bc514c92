import { cpus, totalmem, platform, arch } from 'node:os'

/** The machine a number was measured on: every report starts with it. */
export interface MachineInfo {
  cpu: string
  cores: number
  memoryGiB: number
  platform: string
  node: string
}

/**
 * Describes this machine.
 *
 * ### Examples
 * ```ts
 * machineInfo() // { cpu: 'AMD EPYC', cores: 2, memoryGiB: 24, platform: 'linux-x64', node: 'v20.20.2' }
 * ```
 */
export function machineInfo(): MachineInfo {
  const list = cpus()
  return {
    cpu: (list[0]?.model ?? 'unknown').trim(),
    cores: list.length,
    memoryGiB: Math.round(totalmem() / 1024 ** 3),
    platform: `${platform()}-${arch()}`,
    node: process.version,
  }
}
