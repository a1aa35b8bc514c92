import { provision } from '../../src/index.js'

/**
 * `provision()` as an app (or a test runner's worker) calls it, with no options: prints what it got
 * as one JSON line on stdout — the provider it ran on, or the error's name, code and message.
 * Spawned by test/db/provision-app.test.ts with the environment each case needs.
 */
try {
  const provisioned = await provision()
  console.log(JSON.stringify({ provider: provisioned.info.provider }))
  await provisioned.stop()
} catch (err) {
  const { name, code, message } = err as { name: string; code?: string; message: string }
  console.log(JSON.stringify({ name, code, message }))
}
