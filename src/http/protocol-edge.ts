import { STATUS_CODES } from 'node:http'
import type { Socket } from 'node:net'
import type { IncomingMessage, Server, ServerResponse } from 'node:http'
import type { FastifyHttpOptions, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { AppError, ERRORS, type ErrorName } from '../errors.js'
import { JSON_ANSWER_HEADERS, MEDIA_TYPE } from './media-type.js'

/** The one error body of a row, as the error handler would send it. */
function errorBody(name: ErrorName): string {
  return JSON.stringify({ error: ERRORS[name].code })
}

/**
 * Answers what Node's HTTP parser refuses before Fastify sees a request: an unparseable request
 * (400), headers too large (431), a request not received within REQUEST_TIMEOUT (408). The answer
 * is in the error vocabulary and the connection closes. The raw packet is never logged: it may
 * hold a session key or a cookie.
 */
function clientErrorHandler(this: FastifyInstance, error: Error, socket: Socket): void {
  const code = (error as NodeJS.ErrnoException).code
  if (code === 'ECONNRESET' || socket.destroyed) return
  const name: ErrorName =
    code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? 'requestTimedOut'
      : code === 'HPE_HEADER_OVERFLOW'
        ? 'headersTooLarge'
        : 'malformedRequest'
  // Info, not error: any client can cause these at will.
  this.log.info({ event: 'client-error', code, answer: ERRORS[name].status }, ERRORS[name].code)
  if (!socket.writable) {
    socket.destroy()
    return
  }
  const status = ERRORS[name].status
  // A HEAD answer has no body (RFC 9110, section 9.3.2): its client would read one as a second
  // answer. The refused bytes show the method when they start with the request line; when they
  // do not (headers that overflowed across reads, garbage after an answered request), the body is
  // left out for the same reason. A timeout has no bytes to show, and gets its body.
  const rawPacket = (error as { rawPacket?: unknown }).rawPacket
  const method = Buffer.isBuffer(rawPacket)
    ? /^\s*([A-Z]+) /.exec(rawPacket.subarray(0, 32).toString('latin1'))?.[1]
    : undefined
  const body =
    !Buffer.isBuffer(rawPacket) || (method !== undefined && method !== 'HEAD')
      ? errorBody(name)
      : ''
  const head = [
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}`,
    `content-type: ${MEDIA_TYPE}`,
    `content-length: ${Buffer.byteLength(body)}`,
    ...Object.entries(JSON_ANSWER_HEADERS).map(([header, value]) => `${header}: ${value}`),
    'connection: close',
  ].join('\r\n')
  socket.end(`${head}\r\n\r\n${body}`, () => socket.destroy())
  // A client that stops reading must not keep the socket open.
  setTimeout(() => socket.destroy(), 5000).unref()
}

/** A URL Fastify cannot decode (`/%c0`): 400 malformed-request, like any unparseable request. */
function frameworkErrors(_error: Error, _request: FastifyRequest, reply: FastifyReply): void {
  void reply
    .code(ERRORS.malformedRequest.status)
    .headers(JSON_ANSWER_HEADERS)
    .type(MEDIA_TYPE)
    .send(Buffer.from(errorBody('malformedRequest')))
}

/**
 * The server options that bound how long a client may take: the whole request (headers and
 * body) within REQUEST_TIMEOUT, headers within the same; an idle connection is closed after twice
 * that. Node checks for overdue requests every `connectionsCheckingInterval`, a fraction of it.
 */
export function protocolEdgeOptions(requestTimeoutMs: number): FastifyHttpOptions<Server> {
  return {
    requestTimeout: requestTimeoutMs,
    connectionTimeout: requestTimeoutMs * 2,
    http: {
      // Node checks headersTimeout against its own default requestTimeout (5 min) when it
      // creates the server, before Fastify sets the one above.
      requestTimeout: requestTimeoutMs,
      headersTimeout: requestTimeoutMs,
      connectionsCheckingInterval: Math.max(100, Math.min(5000, Math.floor(requestTimeoutMs / 4))),
      // Node would refuse a request without Host itself, with a bare 400 outside the vocabulary;
      // refuseMissingHost answers it instead.
      requireHostHeader: false,
    },
    clientErrorHandler,
    frameworkErrors,
  }
}

/**
 * What Node would answer itself, with a bare status outside the vocabulary: an HTTP/1.1 request
 * without Host is malformed (RFC 9112, section 3.2): 400 and the connection closes. An `Expect`
 * other than 100-continue (Node's 417) is ignored, as RFC 9110, section 10.1.1 allows.
 */
export function answerOddRequests(app: FastifyInstance): void {
  // Callback-style: every request passes this hook, and then it costs no promise.
  app.addHook('onRequest', (request, reply, done) => {
    if (request.raw.httpVersion === '1.1' && request.raw.headers.host === undefined) {
      void reply.header('connection', 'close')
      return done(new AppError('malformedRequest'))
    }
    done()
  })
  app.server.on('checkExpectation', (request: IncomingMessage, response: ServerResponse) =>
    app.server.emit('request', request, response),
  )
}
