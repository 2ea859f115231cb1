import type { NextFunction, Request, RequestHandler, Response } from 'express'
import type { Answer } from './answers.js'
import type { Client } from './client.js'
import { check, type GuardOptions } from './guard.js'
import { assertTier, type Session, type Tier } from './session.js'
import { createWebhookReceiver, MAX_EVENT_BYTES, type WebhookOptions } from './webhooks.js'

export type { GuardOptions, Session, Tier, WebhookOptions }

declare module 'express-serve-static-core' {
  interface Request {
    /** The caller's session, set by `requireTier`. */
    campusgate?: Session
  }
}

function send(
  res: Response,
  answer: { status: number; body: unknown; headers: Record<string, string> },
): void {
  const body = Buffer.from(JSON.stringify(answer.body))
  // Written as is: Express's res.send would add a charset to the media type.
  res.writeHead(answer.status, { ...answer.headers, 'content-length': String(body.length) })
  res.end(body)
}

/**
 * Express middleware: lets the request through when its session key reaches `tier` (the session
 * is then `req.campusgate`), and otherwise answers as campusgate does.
 */
export function requireTier(
  client: Client,
  tier: Tier,
  options: GuardOptions = {},
): RequestHandler {
  assertTier(tier)
  return function campusgateRequireTier(req: Request, res: Response, next: NextFunction): void {
    check(client, tier, req.headers.authorization, options).then((result) => {
      if ('answer' in result) return send(res, result.answer satisfies Answer)
      req.campusgate = result.session
      next()
    }, next)
  }
}

/**
 * Express route handler for campusgate's lifecycle events. It reads the raw body itself: mount it
 * without a body parser in front (`app.post('/campusgate/events', webhookHandler(...))`).
 */
export function webhookHandler(options: WebhookOptions): RequestHandler {
  const receive = createWebhookReceiver(options)
  return function campusgateWebhook(req: Request, res: Response, next: NextFunction): void {
    readBody(req)
      .then(async (raw) => {
        if (raw === null) return send(res, json(413, { error: 'event too large' }))
        const answer = await receive(raw, req.headers)
        send(res, json(answer.status, answer.body))
      })
      .catch(next)
  }
}

function json(status: number, body: unknown) {
  return { status, body, headers: { 'content-type': 'application/json' } }
}

/** The body as it came, or null past MAX_EVENT_BYTES. A body a parser already read is used as is. */
async function readBody(req: Request): Promise<Buffer | string | null> {
  const parsed: unknown = req.body
  if (Buffer.isBuffer(parsed) || typeof parsed === 'string') return parsed
  if (parsed !== undefined && req.readableEnded) {
    throw new Error('webhookHandler needs the raw body: mount it before express.json()')
  }
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length
    if (size > MAX_EVENT_BYTES) return null
    chunks.push(chunk)
  }
  return Buffer.concat(chunks)
}
