import { readFileSync } from 'node:fs'

/** Clock ticks per second of `/proc/<pid>/task/<tid>/stat` (USER_HZ: 100 on every Linux port Node runs on). */
const USER_HZ = 100

/**
 * CPU seconds (user + system) this thread has used, and what was measured: `thread` on Linux
 * (`/proc/thread-self/stat`, read synchronously so it is this JavaScript thread, 10 ms
 * resolution), else `process` (`process.cpuUsage()`: every thread of the process together).
 *
 * ### Examples
 * ```ts
 * const before = threadCpuSeconds()
 * // … work …
 * const busy = (threadCpuSeconds().seconds - before.seconds) / elapsedSeconds // fraction of one core
 * ```
 */
export function threadCpuSeconds(): { seconds: number; source: 'thread' | 'process' } {
  try {
    const stat = readFileSync('/proc/thread-self/stat', 'utf8')
    // Fields after the command name (which may hold spaces): state is field 3, utime 14, stime 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    const ticks = Number(fields[11]) + Number(fields[12])
    if (Number.isFinite(ticks)) return { seconds: ticks / USER_HZ, source: 'thread' }
  } catch {
    // Not Linux: the whole process below.
  }
  const usage = process.cpuUsage()
  return { seconds: (usage.user + usage.system) / 1e6, source: 'process' }
}
