import type { BuildInfo } from './build-info.js'
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client'

/** Outbound calls campusgate makes and times. */
export type Provider = 'messenger' | 'university'

/** Which per-address limit refused a request. */
export type RateLimitName = 'address' | 'registration' | 'session' | 'backend'

/** What the outbox looks like at scrape time. */
export interface OutboxStats {
  queued: number
  /** Epoch ms of the oldest queued mail, or null when none is queued. */
  oldestQueuedAt: number | null
}

/** Live sessions at scrape time (sessions/store.ts `counts`). */
export interface SessionStats {
  live: number
  /** Users with more than one live session (several devices). */
  usersWithSeveral: number
}

/** What the webhook deliveries look like at scrape time (events/outbox.ts). */
export interface WebhookStats {
  pending: number
  dead: number
  oldestPendingAt: number | null
}

const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

/**
 * The process metrics (heap, CPU, event loop, GC) describe the process, not an app, so one
 * registry holds them for every app the process runs; tests start many apps in one process and
 * collecting them once keeps their observers from piling up.
 */
let processRegistry: Registry | null = null
function processMetrics(): Registry {
  if (processRegistry === null) {
    processRegistry = new Registry()
    collectDefaultMetrics({ register: processRegistry })
  }
  return processRegistry
}

/**
 * One app's metrics, in a registry of its own. Counters are named for what an operator alerts
 * on (docs/operations.md); label values come from small fixed sets, never from user input.
 */
export function createMetrics(options: {
  /** The release, for campusgate_build_info. */
  build: BuildInfo
  clock: { now(): Date }
  outboxStats: () => Promise<OutboxStats>
  /** Null when WEBHOOK_URL is unset: the webhook gauges are then left out. */
  webhookStats?: (() => Promise<WebhookStats>) | null
  /** When the newest finished backup was taken (epoch ms, null: none yet); only when scheduled. */
  newestBackupAt?: () => Promise<number | null>
  /** Whether the database is write-impaired right now (a write failed, no probe since). */
  writeImpaired?: () => boolean
  /** Live sessions and the users holding them, read at scrape time (all instances). */
  sessionStats?: () => Promise<SessionStats>
}) {
  const registry = new Registry()
  const registers = [registry]
  // Started with the first app, so the process counters (CPU seconds) cover the process's life.
  const processRegistryOfApp = processMetrics()

  new Gauge({
    name: 'campusgate_build_info',
    help: 'Always 1; the labels name the running release: its version and the commit it was built from.',
    labelNames: ['version', 'revision'],
    registers,
  }).set({ version: options.build.version, revision: options.build.revision }, 1)

  const httpRequests = new Histogram({
    name: 'campusgate_http_request_duration_seconds',
    help: 'HTTP requests by route pattern, method and status, with their latency.',
    labelNames: ['method', 'route', 'status_code'],
    buckets: LATENCY_BUCKETS,
    registers,
  })

  const registrations = new Counter({
    name: 'campusgate_registrations_total',
    help: 'Messenger registrations: a "new" person, a "returning" one, or one "joined" by a shared unionid.',
    labelNames: ['kind'],
    registers,
  })
  const rotations = new Counter({
    name: 'campusgate_sessions_rotated_total',
    help: 'Sessions a registration ended because the person held SESSIONS_PER_USER live ones.',
    registers,
  })
  const universityLinks = new Counter({
    name: 'campusgate_university_links_total',
    help: 'Tier 2 round trips that ended: linked, denied by the user, or failed at the provider.',
    labelNames: ['outcome'],
    registers,
  })
  const refusals = new Counter({
    name: 'campusgate_refusals_total',
    help: 'Requests refused as security events (callbacks that changed nothing), by reason.',
    labelNames: ['reason'],
    registers,
  })
  const logouts = new Counter({
    name: 'campusgate_logouts_total',
    help: 'Sessions ended by logout (the API or the CLI).',
    registers,
  })
  const expiries = new Counter({
    name: 'campusgate_session_expiries_total',
    help: 'Sessions ended because they expired.',
    registers,
  })
  const erasures = new Counter({
    name: 'campusgate_erasures_total',
    help: 'Users erased (the API or the CLI).',
    registers,
  })
  const auditEvents = new Counter({
    name: 'campusgate_audit_events_total',
    help: 'Audit events recorded, by type.',
    labelNames: ['type'],
    registers,
  })
  const rateLimitRefusals = new Counter({
    name: 'campusgate_rate_limit_refusals_total',
    help: 'Requests refused by a per-address rate limit.',
    labelNames: ['limit'],
    registers,
  })
  const providerCalls = new Histogram({
    name: 'campusgate_provider_request_duration_seconds',
    help: 'Calls to the messenger platform and the identity provider, by outcome.',
    labelNames: ['provider', 'outcome'],
    buckets: LATENCY_BUCKETS,
    registers,
  })
  const providerFailures = new Counter({
    name: 'campusgate_provider_failures_total',
    help: 'Provider calls that could not be made, timed out or answered 5xx.',
    labelNames: ['provider'],
    registers,
  })
  const mailSent = new Counter({
    name: 'campusgate_mail_sent_total',
    help: 'Confirmation emails handed to the mail relay.',
    registers,
  })
  const mailFailures = new Counter({
    name: 'campusgate_mail_delivery_failures_total',
    help: 'Delivery attempts that failed (the mail is retried with backoff).',
    registers,
  })
  const mailAbandoned = new Counter({
    name: 'campusgate_mail_abandoned_total',
    help: 'Mails given up because their link expired before delivery.',
    registers,
  })

  // The outbox is shared by every instance: these read the database at scrape time.
  let stats: Promise<OutboxStats> | null = null
  const scrapeStats = (): Promise<OutboxStats> => (stats ??= options.outboxStats())
  new Gauge({
    name: 'campusgate_outbox_queued',
    help: 'Mails queued and not yet delivered (all instances).',
    registers,
    async collect() {
      this.set((await scrapeStats()).queued)
    },
  })
  new Gauge({
    name: 'campusgate_outbox_oldest_queued_age_seconds',
    help: 'Age of the oldest queued mail; 0 when none is queued.',
    registers,
    async collect() {
      const { oldestQueuedAt } = await scrapeStats()
      const now = options.clock.now().getTime()
      this.set(oldestQueuedAt === null ? 0 : Math.max(0, (now - oldestQueuedAt) / 1000))
    },
  })

  const { newestBackupAt, writeImpaired } = options
  if (newestBackupAt !== undefined) {
    new Gauge({
      name: 'campusgate_backup_newest_age_seconds',
      help: 'Age of the newest finished backup in BACKUP_DIR; -1 while there is none.',
      registers,
      async collect() {
        const at = await newestBackupAt()
        const now = options.clock.now().getTime()
        this.set(at === null ? -1 : Math.max(0, (now - at) / 1000))
      },
    })
  }
  if (writeImpaired !== undefined) {
    new Gauge({
      name: 'campusgate_database_write_impaired',
      help: '1 while the database cannot take writes (disk full, read-only, I/O error), else 0.',
      registers,
      collect() {
        this.set(writeImpaired() ? 1 : 0)
      },
    })
  }
  const webhookTries = new Counter({
    name: 'campusgate_webhook_tries_total',
    help: 'Webhook tries by outcome: delivered (2xx in time), failed (retried later), dead (given up).',
    labelNames: ['outcome'],
    registers,
  })
  for (const outcome of ['delivered', 'failed', 'dead']) webhookTries.labels(outcome)
  const webhookStats = options.webhookStats ?? null
  // The deliveries are shared by every instance: these read the database once per scrape.
  let webhookScrape: Promise<WebhookStats> | null = null
  if (webhookStats !== null) {
    const scrapeWebhooks = (): Promise<WebhookStats> => (webhookScrape ??= webhookStats())
    new Gauge({
      name: 'campusgate_webhook_pending',
      help: 'Webhook deliveries (event × endpoint) not yet delivered and not dead (all instances).',
      registers,
      async collect() {
        this.set((await scrapeWebhooks()).pending)
      },
    })
    new Gauge({
      name: 'campusgate_webhook_dead',
      help: 'Webhook deliveries given up after WEBHOOK_RETRY_FOR, kept until retried by hand.',
      registers,
      async collect() {
        this.set((await scrapeWebhooks()).dead)
      },
    })
    new Gauge({
      name: 'campusgate_webhook_oldest_pending_age_seconds',
      help: 'Age of the oldest event not yet delivered to every endpoint; 0 when none waits.',
      registers,
      async collect() {
        const { oldestPendingAt } = await scrapeWebhooks()
        const now = options.clock.now().getTime()
        this.set(oldestPendingAt === null ? 0 : Math.max(0, (now - oldestPendingAt) / 1000))
      },
    })
  }

  const sessionStats = options.sessionStats ?? null
  // Shared by every instance, as the outbox: one read per scrape.
  let sessionScrape: Promise<SessionStats> | null = null
  if (sessionStats !== null) {
    const scrapeSessions = (): Promise<SessionStats> => (sessionScrape ??= sessionStats())
    new Gauge({
      name: 'campusgate_sessions_live',
      help: 'Live sessions, one per device (all instances).',
      registers,
      async collect() {
        this.set((await scrapeSessions()).live)
      },
    })
    new Gauge({
      name: 'campusgate_users_with_several_sessions',
      help: 'Users holding more than one live session (several devices).',
      registers,
      async collect() {
        this.set((await scrapeSessions()).usersWithSeveral)
      },
    })
  }

  // Children per route and status, so a request costs one observe and no label object.
  const requestChildren = new WeakMap<object, Map<number, Histogram.Internal<string>>>()
  const unmatched = {}

  return {
    contentType: registry.contentType,
    /** The exposition text: this app's metrics, then the process's. */
    async text(): Promise<string> {
      stats = null
      webhookScrape = null
      sessionScrape = null
      try {
        return (await registry.metrics()) + '\n' + (await processRegistryOfApp.metrics())
      } finally {
        stats = null
        webhookScrape = null
        sessionScrape = null
      }
    },
    /**
     * Records one request. `routeKey` is an object that lives as long as the route (its config);
     * `route` is its pattern, never the raw URL.
     */
    observeRequest(
      routeKey: object | undefined,
      method: string,
      route: string | undefined,
      status: number,
      seconds: number,
    ): void {
      const key = routeKey ?? unmatched
      let byStatus = requestChildren.get(key)
      if (byStatus === undefined) {
        byStatus = new Map()
        requestChildren.set(key, byStatus)
      }
      let child = byStatus.get(status)
      if (child === undefined) {
        child = httpRequests.labels(method, route ?? 'unmatched', String(status))
        byStatus.set(status, child)
      }
      child.observe(seconds)
    },
    /** Counts an audit event, and the domain counter it stands for. */
    auditEvent(type: string, detail?: Readonly<Record<string, unknown>>) {
      auditEvents.inc({ type })
      const reason = typeof detail?.reason === 'string' ? detail.reason : undefined
      switch (type) {
        case 'registration':
          return registrations.inc({
            kind: typeof detail?.person === 'string' ? detail.person : 'new',
          })
        case 'rotation':
          return rotations.inc()
        case 'university-linked':
        case 'university-denied':
        case 'university-failed':
          return universityLinks.inc({ outcome: type.slice('university-'.length) })
        case 'university-refused':
          return refusals.inc({ reason: reason ?? 'unknown' })
        case 'logout':
          return logouts.inc()
        case 'expiry':
          return expiries.inc()
        case 'erasure':
          return erasures.inc()
      }
    },
    rateLimitRefusal(limit: RateLimitName) {
      rateLimitRefusals.inc({ limit })
    },
    providerCall(provider: Provider, ok: boolean, seconds: number) {
      providerCalls.observe({ provider, outcome: ok ? 'ok' : 'error' }, seconds)
      if (!ok) providerFailures.inc({ provider })
    },
    webhookTry(outcome: 'delivered' | 'failed' | 'dead') {
      webhookTries.inc({ outcome })
    },
    mailDelivery(outcome: 'sent' | 'failed' | 'abandoned') {
      if (outcome === 'sent') mailSent.inc()
      else if (outcome === 'failed') mailFailures.inc()
      else mailAbandoned.inc()
    },
  }
}

export type Metrics = ReturnType<typeof createMetrics>

/**
 * Times every call a provider client makes through `fetch`. A thrown error (unreachable,
 * timed out) or a 5xx is a failure; a 4xx is the provider answering, so it is not.
 */
export function timedFetch(
  inner: typeof fetch,
  provider: Provider,
  metrics: Metrics,
): typeof fetch {
  return async (input, init) => {
    const started = process.hrtime.bigint()
    const seconds = (): number => Number(process.hrtime.bigint() - started) / 1e9
    try {
      const response = await inner(input, init)
      metrics.providerCall(provider, response.status < 500, seconds())
      return response
    } catch (error) {
      metrics.providerCall(provider, false, seconds())
      throw error
    }
  }
}
