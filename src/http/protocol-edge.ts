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
 * Whether refused bytes could be a HEAD request. The connection's first bytes start with a
 * request line, so their first word is the method, however malformed (`get`, `G3T`, `POST` with
 * two spaces after it). Later bytes may continue headers that overflowed across reads; there
 * the method shows only where the parser refused the method itself, or where the bytes start as a
 * request line does (a method, then a target: a path, `*` or an absolute URL).
 */
function couldBeHead(packet: Buffer, socket: Socket, code: string | undefined): boolean {
  const text = packet
    .subarray(0, 8192)
    .toString('latin1')
    .replace(/^[\r\n]+/, '')
  const method =
    socket.bytesRead <= packet.length || code === 'HPE_INVALID_METHOD'
      ? /^(\S+)[ \r\n]/.exec(text)?.[1]
      : /^([!-~]+) +(?:\/|\*|[a-z][a-z0-9+.-]*:\/\/)/i.exec(text)?.[1]
  // Methods are case-sensitive, but a client that wrote `head` means HEAD.
  return method === undefined || method.toUpperCase() === 'HEAD'
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
  // answer. The body is left out only when the refused bytes could be a HEAD request: they show
  // HEAD, or they do not show their method at all (headers that overflowed across reads, garbage
  // after an answered request). A timeout has no bytes to show, and gets its body.
  const rawPacket = (error as { rawPacket?: unknown }).rawPacket
  const body =
    !Buffer.isBuffer(rawPacket) || !couldBeHead(rawPacket, socket, code) ? errorBody(name) : ''
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
