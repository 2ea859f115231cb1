import { Webhook } from 'standardwebhooks'

/** The Standard Webhooks headers of one try. */
export interface SignedHeaders {
  'webhook-id': string
  'webhook-timestamp': string
  'webhook-signature': string
}

/**
 * Signs with every WEBHOOK_SECRET (the `standardwebhooks` package computes each signature): the
 * header lists one `v1,<signature>` per secret, space-separated, so a receiver that knows any one
 * of them accepts the event while the secrets rotate.
 */
export function createSigner(secrets: readonly string[]) {
  const signers = secrets.map((secret) => new Webhook(secret))
  return (eventId: string, at: Date, body: string): SignedHeaders => ({
    'webhook-id': eventId,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': signers.map((signer) => signer.sign(eventId, at, body)).join(' '),
  })
}

export type Signer = ReturnType<typeof createSigner>
