import {
  LogController,
  type FastifyInstance,
  type FastifyRequest,
  type FastifyServerOptions,
} from 'fastify'
import pino from 'pino'

/**
 * What a request log line shows: method and path only. Query strings carry registration codes and
 * the callback's client_secret; headers carry session keys and attempt cookies.
 */
export function requestForLog(request: FastifyRequest): Record<string, string> {
  return { method: request.method, path: request.url.split('?')[0] ?? '', ip: request.ip }
}

/**
 * The logger, with one line per request written when it completes (`logCompletedRequests`) in
 * place of Fastify's two: that line has the method, path, address, status and time, and
 * formatting and writing log lines is a large share of a key check's cost.
 *
 * Lines go to standard output as they are made, one `write` each (`sync: true`), not through
 * pino's default buffer that libuv's thread pool writes out: a crash loses no line already
 * logged, a stalled log reader holds the service back instead of growing its memory, and the
 * hand-off to a pool thread and back cost more than the write itself (docs/performance.md).
 */
export function requestLogging(
  level: string,
  stream: pino.DestinationStream = pino.destination({ dest: 1, sync: true }),
): Pick<FastifyServerOptions, 'logger' | 'logController'> {
  return {
    logger: {
      level,
      stream,
      serializers: { req: requestForLog },
    },
    // Fastify's own two lines per request are off; logCompletedRequests writes the one line.
    logController: new LogController({ disableRequestLogging: true }),
  }
}

export function logCompletedRequests(app: FastifyInstance): void {
  app.addHook('onResponse', (request, reply, done) => {
    request.log.info(
      { req: request, res: reply, responseTime: reply.elapsedTime },
      'request completed',
    )
    done()
  })
}
