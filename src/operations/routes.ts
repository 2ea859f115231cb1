import type { FastifyInstance, LogLevel } from 'fastify'
import { AppError } from '../errors.js'
import { errorResponses, jsonResponse } from '../http/schemas.js'
import { sessionKeyFrom } from '../http/tier-guard.js'
import { secretsEqual } from '../lib/secrets.js'
import type { Metrics } from './metrics.js'

export interface OperationsRoutesOptions {
  metrics: Metrics
  /** `Authorization: Bearer <token>` required on /metrics when set. */
  metricsToken: string | null
  /** Resolves when the database answers and its schema is current; rejects otherwise. */
  checkReady: () => Promise<void>
  readyTimeoutMs?: number
  /** LOG_LEVEL; these routes log their request lines at warn unless it is quieter still. */
  logLevel: string
}

/**
 * Probes and scrapes come every few seconds from a load balancer, Kubernetes or Prometheus: they
 * are not throttled per address (a monitoring host must never be locked out) and their request
 * lines are logged only at warn.
 */
const OPERATIONAL = { exemptFromAddressLimit: true } as const

function withTimeout(work: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms)
  })
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer))
}

/** GET /healthz, /readyz and /metrics (docs/operations.md). */
export function operationsRoutes(app: FastifyInstance, options: OperationsRoutesOptions): void {
  const { metrics, metricsToken } = options
  const readyTimeoutMs = options.readyTimeoutMs ?? 2000
  const logLevel = (
    ['warn', 'error', 'fatal', 'silent'].includes(options.logLevel) ? options.logLevel : 'warn'
  ) as LogLevel

  app.get(
    '/healthz',
    {
      logLevel,
      config: OPERATIONAL,
      schema: {
        operationId: 'getHealth',
        summary: 'Liveness: 200 while the process serves',
        tags: ['operations'],
        security: [],
        response: {
          200: jsonResponse('The process serves.', {
            type: 'object',
            required: ['status'],
            properties: { status: { type: 'string', const: 'ok' } },
          }),
          ...errorResponses(),
        },
      },
    },
    async () => ({ status: 'ok' }),
  )

  app.get(
    '/readyz',
    {
      logLevel,
      config: OPERATIONAL,
      schema: {
        operationId: 'getReadiness',
        summary: 'Readiness: the database answers and its schema is current',
        tags: ['operations'],
        security: [],
        response: {
          200: jsonResponse('Ready to serve.', {
            type: 'object',
            required: ['status'],
            properties: { status: { type: 'string', const: 'ready' } },
          }),
          ...errorResponses('notReady'),
        },
      },
    },
    async () => {
      try {
        await withTimeout(options.checkReady(), readyTimeoutMs)
      } catch (error) {
        // The error handler logs the cause with the 503.
        throw new AppError('notReady', { cause: error })
      }
      return { status: 'ready' }
    },
  )

  app.get(
    '/metrics',
    {
      logLevel,
      config: OPERATIONAL,
      schema: {
        operationId: 'getMetrics',
        summary: 'Prometheus metrics (text exposition format)',
        description:
          'Open unless METRICS_TOKEN is set; then it needs `Authorization: Bearer <token>`.',
        tags: ['operations'],
        security: metricsToken === null ? [] : [{ metricsToken: [] }],
        response: {
          200: {
            description: 'The metrics.',
            content: { 'text/plain': { schema: { type: 'string' } } },
          },
          ...errorResponses('invalidMetricsToken'),
        },
      },
    },
    async (request, reply) => {
      if (metricsToken !== null) {
        const header = request.headers.authorization ?? ''
        const given = /^bearer\s+/i.test(header) ? sessionKeyFrom(header) : null
        if (given === null || !secretsEqual(given, metricsToken)) {
          throw new AppError('invalidMetricsToken')
        }
      }
      const text = await metrics.text()
      return reply.header('cache-control', 'no-store').type(metrics.contentType).send(text)
    },
  )
}
