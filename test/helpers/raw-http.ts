import { connect, type Socket } from 'node:net'

/** An HTTP answer as it came off the wire. */
export interface RawAnswer {
  status: number
  /** Header names lower-cased. */
  headers: Record<string, string>
  body: string
  /** Whether the server closed the connection. */
  closed: boolean
}

/** Parses the first answer in `text` (no chunked encoding: campusgate sends Content-Length). */
export function parseRaw(text: string, closed: boolean): RawAnswer {
  const end = text.indexOf('\r\n\r\n')
  const head = end === -1 ? text : text.slice(0, end)
  const [statusLine = '', ...lines] = head.split('\r\n')
  const headers: Record<string, string> = {}
  for (const line of lines) {
    const colon = line.indexOf(':')
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim()
  }
  return {
    status: Number(statusLine.split(' ')[1] ?? 0),
    headers,
    body: end === -1 ? '' : text.slice(end + 4),
    closed,
  }
}

/**
 * Writes `request` as raw bytes on a new connection and collects what comes back until the server
 * closes it or `waitMs` passes (then `closed` is false). `keepOpen` leaves the client side open, as
 * a slow client that never finishes its body does.
 */
export function rawRequest(
  url: string,
  request: string | Buffer,
  options: { waitMs?: number } = {},
): Promise<RawAnswer> {
  const { hostname, port } = new URL(url)
  return new Promise((resolve) => {
    let text = ''
    let settled = false
    const socket: Socket = connect(Number(port), hostname, () => socket.write(request))
    const finish = (closed: boolean): void => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      socket.destroy()
      resolve(parseRaw(text, closed))
    }
    const timer = setTimeout(() => finish(false), options.waitMs ?? 10_000)
    socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')))
    socket.on('close', () => finish(true))
    socket.on('error', () => finish(true))
  })
}

/** Opens a connection, writes `request`, then resets the connection without finishing it. */
export function abortedRequest(url: string, request: string): Promise<void> {
  const { hostname, port } = new URL(url)
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname, () => {
      socket.write(request, () => setTimeout(() => socket.resetAndDestroy(), 50))
    })
    socket.on('close', () => resolve())
    socket.on('error', () => resolve())
  })
}
