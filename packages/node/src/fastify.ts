import type {
  FastifyInstance,
  FastifyPluginAsync,
  FastifyPluginCallback,
  FastifyReply,
  FastifyRequest,
  onRequestAsyncHookHandler,
} from 'fastify'
import type { Client } from './client.js'
import { check, refusalOf, type GuardOptions, type Refusal } from './guard.js'
import { assertTier, type Session, type Tier } from './session.js'
import {
  createWebhookReceiver,
  MAX_EVENT_BYTES,
  WebhookRefusedError,
  type WebhookOptions,
} from './webhooks.js'

export type { GuardOptions, Refusal, Session, Tier, WebhookOptions }

/** The guard's options in Fastify. */
export interface FastifyGuardOptions extends GuardOptions {
  /**
   * Answers a refusal the app's own way instead of the kit (its status, campusgate's code and any
   * `retryAfter`). If it returns without having sent an answer, the kit answers as campusgate does.
   */
  onRefused?: (refusal: Refusal, request: FastifyRequest, reply: FastifyReply) => unknown
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The caller's session, set by `requireTier`; null where no guard ran. */
    campusgate: Session | null
  }
}

/**
 * Declares `request.campusgate` (null until `requireTier` sets it) with `decorateRequest`, as
 * Fastify wants request properties declared up front. Register it once, before the routes:
 * `await app.register(campusgatePlugin)`.
 */
export const campusgatePlugin: FastifyPluginCallback = Object.assign(
  function campusgate(app: FastifyInstance, _options: unknown, done: (error?: Error) => void) {
    if (!app.hasRequestDecorator('campusgate')) app.decorateRequest('campusgate', null)
    done()
  },
  // Not encapsulated (what fastify-plugin does), so every route of the app sees the declaration.
  { [Symbol.for('skip-override')]: true },
)

let warnedUndeclared = false

/**
 * Fastify `onRequest` hook: lets the request through when its session key reaches `tier` (the
 * session is then `request.campusgate`), and otherwise answers as campusgate does.
 */
export function requireTier(
  client: Client,
  tier: Tier,
  options: FastifyGuardOptions = {},
): onRequestAsyncHookHandler {
  assertTier(tier)
  return async function campusgateRequireTier(
    this: FastifyInstance,
    request: FastifyRequest,
    reply: FastifyReply,
  ) {
    if (!warnedUndeclared && !this.hasRequestDecorator('campusgate')) {
      warnedUndeclared = true
      process.emitWarning(
        'campusgate-node/fastify: register campusgatePlugin before routes that use requireTier, ' +
          'so request.campusgate is declared with decorateRequest',
        { code: 'CAMPUSGATE_UNDECLARED_REQUEST' },
      )
    }
    const result = await check(client, tier, request.headers.authorization, options)
    if ('answer' in result) {
      if (options.onRefused !== undefined) {
        await options.onRefused(refusalOf(result.answer), request, reply)
        if (reply.sent) return reply
      }
      // Fail closed: a refusal is answered whatever onRefused did.
      const { status, headers, body } = result.answer
      // A Buffer, so Fastify adds no charset to the media type.
      return reply
        .code(status)
        .headers(headers)
        .send(Buffer.from(JSON.stringify(body)))
    }
    request.campusgate = result.session
  }
}

/**
 * A Fastify plugin with one route, `POST /` under the prefix it is registered with, for
 * campusgate's lifecycle events. It reads the raw body itself (its own content-type parser, in
 * its own context): `app.register(webhookHandler({ client, secret, on }), { prefix: '/campusgate/events' })`.
 */
export function webhookHandler(options: WebhookOptions): FastifyPluginAsync {
  const receive = createWebhookReceiver(options)
  return async function campusgateWebhook(app: FastifyInstance) {
    app.removeAllContentTypeParsers()
    // One byte over the limit is still read, so that receive() refuses it and reports why.
    app.addContentTypeParser(
      '*',
      { parseAs: 'buffer', bodyLimit: MAX_EVENT_BYTES + 1 },
      (_r, body, done) => done(null, body),
    )
    app.setErrorHandler((error, _request, reply) => {
      if ((error as { code?: unknown }).code !== 'FST_ERR_CTP_BODY_TOO_LARGE') throw error
      const refusal = new WebhookRefusedError(
        'too-large',
        413,
        `event larger than ${MAX_EVENT_BYTES} bytes`,
      )
      try {
        options.onError?.(refusal)
      } catch {
        // A failing logger must not change the answer.
      }
      return reply.code(413).send({ error: refusal.message })
    })
    app.post('/', async (request, reply) => {
      const raw = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0)
      const answer = await receive(raw, request.headers)
      return reply.code(answer.status).send(answer.body)
    })
  }
}
