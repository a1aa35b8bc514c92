import { provision } from './src/index.js'
const { url } = await provision({ provider: 'container' })
console.log(
  'ready',
  url,
  'SIGINT listeners',
  process.listenerCount('SIGINT'),
  process
    .listeners('SIGINT')
    .map(String)
    .map((s) => s.slice(0, 80)),
)
process.on('exit', (c) => console.log('exiting', c))
setTimeout(() => process.kill(process.pid, 'SIGINT'), 300)
setInterval(() => {}, 1000)
