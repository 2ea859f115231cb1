// Ports for the bench's servers, all chosen before any of them starts (a backend must know the
// port of the campusgate it stands in front of).
import { readFileSync } from 'node:fs'
import { createServer } from 'node:net'

/** The lowest port the kernel gives the local end of an outgoing connection. */
function ephemeralLow(): number {
  try {
    return Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').split(/\s+/)[0])
  } catch {
    return 32768
  }
}

const FIRST = 20000
const handedOut = new Set<number>()

async function bindable(port: number): Promise<boolean> {
  const server = createServer()
  const listening = await new Promise<boolean>((resolve) => {
    server.once('listening', () => resolve(true))
    server.once('error', () => resolve(false))
    server.listen(port, '127.0.0.1')
  })
  if (listening) await new Promise((resolve) => server.close(resolve))
  return listening
}

/**
 * A free port below the kernel's ephemeral range. A port from `listen(0)` lies inside that range,
 * and between choosing it and the server binding it, the local end of one of the other servers'
 * connections (to PostgreSQL, to code2session) once took it: the server failed with EADDRINUSE.
 * Below the range no outgoing connection is given a port.
 */
export async function benchPort(): Promise<number> {
  const span = ephemeralLow() - FIRST
  const start = Math.floor(Math.random() * span)
  for (let i = 0; i < span; i += 1) {
    const port = FIRST + ((start + i) % span)
    if (handedOut.has(port) || !(await bindable(port))) continue
    handedOut.add(port)
    return port
  }
  throw new Error(`no free port between ${FIRST} and ${FIRST + span}`)
}
