import type { IncomingMessage, ServerResponse } from 'node:http'
import express, {
  type NextFunction,
  type Request,
  type RequestHandler,
  type Response,
} from 'express'
import type { Client } from './client.js'
import { check, refusalOf, type GuardOptions, type Refusal } from './guard.js'
import { assertTier, type Session, type Tier } from './session.js'
import { createWebhookReceiver, MAX_EVENT_BYTES, type WebhookOptions } from './webhooks.js'

export type { GuardOptions, Refusal, Session, Tier, WebhookOptions }

declare module 'express-serve-static-core' {
  interface Request {
    /** The caller's session, set by `requireTier`; null where no guard ran (as in Fastify). */
    campusgate: Session | null
  }
}

// Every Express request has it, null until a guard sets it: the type above is true at run time.
if (!Object.hasOwn(express.request, 'campusgate')) {
  Object.defineProperty(express.request, 'campusgate', {
    value: null,
    writable: true,
    configurable: true,
    enumerable: false,
  })
}

/** The guard's options in Express. */
export interface ExpressGuardOptions extends GuardOptions {
  /**
   * Answers a refusal the app's own way instead of the kit (its status, campusgate's code and any
   * `retryAfter`). It must answer, or throw (passed to `next`); if it returns without having
   * started an answer, the kit answers as campusgate does.
   */
  onRefused?: (refusal: Refusal, req: Request, res: Response) => unknown
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
  options: ExpressGuardOptions = {},
): RequestHandler {
  assertTier(tier)
  const { onRefused } = options
  return function campusgateRequireTier(req: Request, res: Response, next: NextFunction): void {
    check(client, tier, req.headers.authorization, options)
      .then(async (result) => {
        if ('session' in result) {
          req.campusgate = result.session
          return next()
        }
        if (onRefused !== undefined) await onRefused(refusalOf(result.answer), req, res)
        // Fail closed: a refusal is answered whatever onRefused did.
        if (!res.headersSent && !res.writableEnded) send(res, result.answer)
      })
      .catch(next)
  }
}

/**
 * Express route handler for campusgate's lifecycle events. It needs the body as it came: mount it
 * without a body parser in front, or, behind a global `express.json()`, save the raw body with
 * `express.json({ verify: keepRawBody })`.
 */
export function webhookHandler(options: WebhookOptions): RequestHandler {
  const receive = createWebhookReceiver(options)
  return function campusgateWebhook(req: Request, res: Response, next: NextFunction): void {
    readBody(req)
      .then(async (raw) => {
        if (raw === PARSED) return send(res, json(500, { error: NEEDS_RAW_BODY }))
        const answer = await receive(raw, req.headers)
        send(res, json(answer.status, answer.body))
      })
      .catch(next)
  }
}

/**
 * A body parser's `verify` that keeps the raw body on `req.rawBody`, where `webhookHandler`
 * looks for it: `app.use(express.json({ verify: keepRawBody }))`.
 */
export function keepRawBody(req: IncomingMessage, _res: ServerResponse, buf: Buffer): void {
  ;(req as IncomingMessage & { rawBody?: Buffer }).rawBody = buf
}

const NEEDS_RAW_BODY =
  'webhookHandler needs the raw body, and a body parser already read it: mount the route before ' +
  'express.json(), or keep the raw body with express.json({ verify: (req, res, buf) => ' +
  '{ req.rawBody = buf } }) (keepRawBody from campusgate-node/express does that)'

function json(status: number, body: unknown) {
  return { status, body, headers: { 'content-type': 'application/json' } }
}

const PARSED = Symbol('parsed')

/**
 * The body as it came (read no further than just past MAX_EVENT_BYTES, which the receiver then
 * refuses); PARSED when a parser took it.
 */
async function readBody(req: Request): Promise<Buffer | string | typeof PARSED> {
  const saved = (req as Request & { rawBody?: unknown }).rawBody
  const parsed: unknown = req.body
  for (const body of [saved, parsed]) {
    if (Buffer.isBuffer(body) || typeof body === 'string') return body
  }
  if (parsed !== undefined && req.readableEnded) return PARSED
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of req as AsyncIterable<Buffer>) {
    chunks.push(chunk)
    size += chunk.length
    if (size > MAX_EVENT_BYTES) break
  }
  return Buffer.concat(chunks)
}
