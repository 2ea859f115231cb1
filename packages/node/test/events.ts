import { randomBytes, randomUUID } from 'node:crypto'
import { Webhook } from 'standardwebhooks'

export function newSecret(): string {
  return `whsec_${randomBytes(24).toString('base64')}`
}

/** One event signed as Standard Webhooks signs it (the standardwebhooks package). */
export function signedEvent(
  secret: string,
  type: string,
  data: Record<string, unknown>,
  at = new Date(),
  id = `msg_${randomUUID()}`,
): { body: string; headers: Record<string, string> } {
  const body = JSON.stringify({ type, timestamp: at.toISOString(), data })
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'webhook-id': id,
      'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
      'webhook-signature': new Webhook(secret).sign(id, at, body),
    },
  }
}

export async function deliver(
  url: string,
  event: { body: string; headers: Record<string, string> },
): Promise<{ status: number; body: unknown }> {
  const response = await fetch(url, { method: 'POST', headers: event.headers, body: event.body })
  const text = await response.text()
  let body: unknown = text
  try {
    body = JSON.parse(text)
  } catch {
    // An error page: only the status matters then.
  }
  return { status: response.status, body }
}
