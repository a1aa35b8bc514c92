/**
 * Started by providers.test.ts: provisions a container, says where, and waits to be interrupted
 * (SIGINT). With no handler of its own, the provider's cleanup must remove the container.
 */
import { provision } from '../../src/index.js'

const { url } = await provision({ provider: 'container' })
process.stdout.write(`ready ${url}\n`)
setInterval(() => {}, 1000)
