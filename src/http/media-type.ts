import type { FastifyContextConfig, FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import secureJson from 'secure-json-parse'
import { AppError } from '../errors.js'

/** docs/decisions.md, "Wire interface": request bodies are at most 16 KiB. */
export const BODY_LIMIT_BYTES = 16 * 1024

/** The one media type of the v1 wire interface, sent exactly so (no charset parameter). */
export const MEDIA_TYPE = 'application/vnd.service.v1+json'

/** What every JSON answer carries besides its media type (docs/decisions.md, "Answers at the protocol edge"). */
export const JSON_ANSWER_HEADERS = {
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
} as const

const V1_RANGES = new Set([
  '*/*',
  'application/*',
  'application/json',
  'application/vnd.service+json',
  MEDIA_TYPE,
])
const VERSIONED = /^application\/vnd\.service\.v\d+\+json$/

/**
 * docs/decisions.md, "Wire interface": v1 is served unless `Accept` names only other versions of our media
 * type. Ranges with `q=0` are refusals and do not count; unrelated types (a browser's `text/html`)
 * do not make a request unacceptable on their own.
 */
export function acceptsV1(accept: string | undefined): boolean {
  if (accept === undefined || accept.trim() === '') return true
  let namesOtherVersion = false
  for (const part of accept.split(',')) {
    const [rawRange = '', ...params] = part.split(';')
    const range = rawRange.trim().toLowerCase()
    if (range === '') continue
    const q = params.map((p) => p.trim().toLowerCase()).find((p) => p.startsWith('q='))
    if (q !== undefined && Number(q.slice(2)) === 0) continue
    if (V1_RANGES.has(range)) return true
    if (VERSIONED.test(range)) namesOtherVersion = true
  }
  return !namesOtherVersion
}

/**
 * Replaces Fastify's body parsers with one for `application/json` and every structured-syntax
 * `+json` type (ours included). An empty body is no body; anything else is 415 via the handler.
 */
export function acceptJsonBodiesOnly(app: FastifyInstance): void {
  app.removeAllContentTypeParsers()
  app.addContentTypeParser(
    // Parameters allowed: `application/json; charset=utf-8` is what most clients send.
    /^application\/([a-z0-9.+-]+\+)?json\s*(;|$)/i,
    { parseAs: 'string' },
    (_request, body: string, done) => {
      if (body.trim() === '') return done(null, undefined)
      try {
        done(
          null,
          secureJson.parse(body, undefined, { protoAction: 'remove', constructorAction: 'remove' }),
        )
      } catch (cause) {
        done(new AppError('malformedJson', { cause }), undefined)
      }
    },
  )
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Set to false on routes that speak another protocol (the sandbox's WeChat imitation). */
    versionedMediaType?: boolean
    /** Set on a route that answers whatever the client accepts (the callback: "in every case"). */
    answersAnyAccept?: boolean
  }
}

function wantsVersionedMediaType(config: FastifyContextConfig): boolean {
  return config.versionedMediaType !== false
}

/**
 * Accept negotiation (406), JSON-only request bodies (415/400/413 via the error handler) and the
 * exact `Content-Type` on every JSON response. Routes that speak another protocol opt out with
 * `versionedMediaType: false`: the sandbox's imitations, the console's pages, and `POST /introspect`,
 * the one route of the API itself whose answers are `application/json` (RFC 7662 answers so, and
 * a backend's OAuth library expects it; docs/tier-guard.md, "From another backend").
 */
export const mediaType = fp(
  function mediaTypePlugin(app: FastifyInstance) {
    acceptJsonBodiesOnly(app)

    app.addHook('onRequest', (request, _reply, done) => {
      // Fastify builds `routeOptions` anew on every read.
      const { config } = request.routeOptions
      if (
        wantsVersionedMediaType(config) &&
        config.answersAnyAccept !== true &&
        !acceptsV1(request.headers.accept)
      ) {
        return done(new AppError('unsupportedApiVersion'))
      }
      done()
    })

    app.addHook('onSend', (request, reply, payload, done) => {
      const contentType = reply.getHeader('content-type')
      if (typeof contentType !== 'string') return done(null, payload)
      if (
        /^application\/(json|vnd\.service\.v1\+json)\b/.test(contentType) &&
        wantsVersionedMediaType(request.routeOptions.config)
      ) {
        reply.header('content-type', MEDIA_TYPE)
      }
      // docs/decisions.md, "Answers at the protocol edge": JSON answers (one carries a session key) are never cached, nor sniffed as
      // something else. A route's stricter no-cache header that already says no-store stays.
      if (/^application\/([a-z0-9.+-]+\+)?json\b/i.test(contentType)) {
        if (!/\bno-store\b/.test(String(reply.getHeader('cache-control') ?? ''))) {
          reply.header('cache-control', JSON_ANSWER_HEADERS['cache-control'])
        }
        reply.header('x-content-type-options', JSON_ANSWER_HEADERS['x-content-type-options'])
      }
      done(null, payload)
    })
  },
  { name: 'media-type' },
)
