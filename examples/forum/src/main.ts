// The forum as a process: configured by its environment, as campusgate is.
import type { AddressInfo } from 'node:net'
import { createForum } from './forum.js'

function required(name: string): string {
  const value = process.env[name]?.trim()
  if (value === undefined || value === '') {
    console.error(`forum: ${name} is required (see examples/forum/README.md)`)
    process.exit(1)
  }
  return value
}

const [id, secret] = required('FORUM_CREDENTIALS').split(':')
if (id === undefined || secret === undefined || id === '' || secret === '') {
  console.error("forum: FORUM_CREDENTIALS is id:secret, as in campusgate's BACKEND_CREDENTIALS")
  process.exit(1)
}
const forum = createForum({
  campusgateUrl: process.env.CAMPUSGATE_URL ?? 'http://127.0.0.1:3000',
  credentials: { id, secret },
  webhookSecret: required('WEBHOOK_SECRET'),
})
const server = forum.app.listen(
  Number(process.env.PORT ?? 4000),
  process.env.HOST ?? '127.0.0.1',
  () => {
    const { address, port } = server.address() as AddressInfo
    console.log(`forum: listening on http://${address}:${port}`)
  },
)
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => server.close(() => void forum.close()))
}
