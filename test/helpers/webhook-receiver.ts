import { randomBytes } from 'node:crypto'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { Webhook } from 'standardwebhooks'

/** A fresh Standard Webhooks secret. */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`
}

/** One request the receiver got, byte for byte, and what it answered. */
export interface ReceivedRequest {
  id: string
  headers: IncomingMessage['headers']
  /** The raw body as sent. */
  body: string
  /** Whether `secret` verified it with the standardwebhooks package. */
  verified: boolean
  /** The status answered; null when the receiver did not answer (hung or dropped). */
  answered: number | null
}

export interface DeliveredEvent {
  id: string
  type: string
  timestamp: string
  data: Record<string, any>
}

/** How to answer a request: a status, `hang` (never answer), or `drop` (close the connection). */
export type Answer = number | 'hang' | 'drop'

/**
 * A webhook endpoint on loopback that the test controls: it verifies each request with the
 * standardwebhooks package and answers as `answer` says (200 by default).
 */
export interface WebhookReceiver {
  url: string
  requests: ReceivedRequest[]
  /** The events answered 2xx, in the order they arrived, parsed. */
  delivered(): DeliveredEvent[]
  answer: (request: ReceivedRequest, index: number) => Answer
  /** Resolves once `count` events have been answered 2xx, or fails after timeoutMs. */
  waitForDelivered(count: number, timeoutMs?: number): Promise<DeliveredEvent[]>
  /** Resolves once `count` requests have arrived. */
  waitForRequests(count: number, timeoutMs?: number): Promise<ReceivedRequest[]>
  /** Stops listening (connection refused) until `start` again, on the same port. */
  stop(): Promise<void>
  start(): Promise<void>
  close(): Promise<void>
}

export async function startWebhookReceiver(
  secret: string,
  options: { path?: string; port?: number } = {},
): Promise<WebhookReceiver> {
  const verifier = new Webhook(secret)
  const requests: ReceivedRequest[] = []
  const sockets = new Set<Socket>()
  const hung: ServerResponse[] = []
  let port = options.port ?? 0
  let server: Server | null = null

  const receiver: WebhookReceiver = {
    url: '',
    requests,
    answer: () => 200,
    delivered() {
      return requests
        .filter((r) => r.answered !== null && r.answered >= 200 && r.answered < 300)
        .map((r) => ({ id: r.id, ...(JSON.parse(r.body) as Omit<DeliveredEvent, 'id'>) }))
    },
    async waitForDelivered(count, timeoutMs = 5000) {
      await until(
        () => receiver.delivered().length >= count,
        timeoutMs,
        () => `${receiver.delivered().length} of ${count} events delivered`,
      )
      return receiver.delivered()
    },
    async waitForRequests(count, timeoutMs = 5000) {
      await until(
        () => requests.length >= count,
        timeoutMs,
        () => `${requests.length} of ${count} requests arrived`,
      )
      return requests
    },
    async stop() {
      if (server === null) return
      const closing = server
      server = null
      for (const response of hung.splice(0)) response.destroy()
      for (const socket of sockets) socket.destroy()
      await new Promise<void>((resolve) => closing.close(() => resolve()))
    },
    async start() {
      const next = createServer((request, response) => handle(request, response))
      next.on('connection', (socket) => {
        sockets.add(socket)
        socket.on('close', () => sockets.delete(socket))
      })
      await new Promise<void>((resolve) => next.listen(port, '127.0.0.1', resolve))
      port = (next.address() as AddressInfo).port
      server = next
      receiver.url = `http://127.0.0.1:${port}${options.path ?? '/webhooks'}`
    },
    close: () => receiver.stop(),
  }

  function handle(request: IncomingMessage, response: ServerResponse): void {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8')
      let verified = false
      try {
        verifier.verify(body, request.headers as Record<string, string>)
        verified = true
      } catch {
        verified = false
      }
      const received: ReceivedRequest = {
        id: String(request.headers['webhook-id'] ?? ''),
        headers: request.headers,
        body,
        verified,
        answered: null,
      }
      requests.push(received)
      const answer = receiver.answer(received, requests.length - 1)
      if (answer === 'hang') {
        hung.push(response)
        return
      }
      if (answer === 'drop') {
        request.socket.destroy()
        return
      }
      received.answered = answer
      response.writeHead(answer, { 'content-type': 'text/plain' }).end('ok')
    })
  }

  await receiver.start()
  return receiver
}

async function until(done: () => boolean, timeoutMs: number, what: () => string): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`timed out: ${what()}`)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}
