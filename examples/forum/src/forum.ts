import { randomUUID } from 'node:crypto'
import express, { type Express, type Request, type Response } from 'express'
import {
  createClient,
  EVENT_TYPES,
  type Client,
  type WebhookEvent,
  type WebhookHandlers,
  type WebhookRefusedError,
} from 'campusgate-node'
import { requireTier, webhookHandler } from 'campusgate-node/express'

export interface ForumOptions {
  /** campusgate's address as this backend reaches it. */
  campusgateUrl: string
  /** The forum's entry of campusgate's BACKEND_CREDENTIALS: keys are checked by introspection. */
  credentials: { id: string; secret: string }
  /** campusgate's WEBHOOK_SECRET: its events reach `POST /campusgate/events`. */
  webhookSecret: string
  /** How long a checked key is believed; each event about its user forgets it at once. */
  cacheTtlMs?: number
  /** Where the forum says what it did not accept (a refused event). */
  log?: (line: string) => void
  /** Told of every event the forum handled, after the forum acted on it (an activity feed). */
  onEvent?: (event: WebhookEvent) => void
}

export interface Post {
  id: string
  /**
   * The author: campusgate's id of the person (the session's `userId`), the same in every app
   * and never reused, so an erasure reaches exactly their posts.
   */
  authorId: string
  /** The author's messenger openId, as shown beside the post. */
  author: string
  text: string
  createdAt: string
}

export interface Forum {
  app: Express
  client: Client
  /** What the forum holds, for a look from outside (tests, an admin page). */
  boards: { public: Post[]; campus: Post[] }
  close(): Promise<void>
}

const MAX_TEXT = 500

/**
 * The forum: anyone signed in (tier 1) reads and writes the public board; the campus board is for
 * university members (tier 2). Posts are kept in memory: this is an example of the guard, not of
 * storage.
 */
export function createForum(options: ForumOptions): Forum {
  const log = options.log ?? ((line: string) => console.log(line))
  const client = createClient({
    baseUrl: options.campusgateUrl,
    credentials: options.credentials,
    cache: { ttlMs: options.cacheTtlMs ?? 60_000, max: 10_000 },
    onError: (cause) => log(`campusgate key check failed (${cause.kind}): ${cause.message}`),
  })
  const boards: Forum['boards'] = { public: [], campus: [] }
  const members = requireTier(client, 'messenger-registered')
  const campus = requireTier(client, 'university-registered')

  // The webhook handler has already dropped the cached keys of the event's user (a new tier, an
  // ended session is seen at the next request); the forum only has its own data to look after.
  const on: WebhookHandlers = {}
  for (const type of EVENT_TYPES) {
    on[type] = (event: WebhookEvent) => {
      // The user asked campusgate to forget them: the forum forgets their posts too. By userId: a
      // late or replayed event of an erased person never touches a new account of the same openId.
      if (event.type === 'user.erased') {
        for (const board of [boards.public, boards.campus]) {
          const kept = board.filter((post) => post.authorId !== event.data.userId)
          board.splice(0, board.length, ...kept)
        }
      }
      options.onEvent?.(event)
    }
  }

  const app = express()
  // Before express.json(): the events are verified on the bytes campusgate signed.
  app.post(
    '/campusgate/events',
    webhookHandler({
      client,
      secret: options.webhookSecret,
      on,
      onError: (refusal: WebhookRefusedError) =>
        log(`campusgate event refused (${refusal.reason}): ${refusal.message}`),
    }),
  )
  app.use(express.json({ limit: '16kb' }))

  const list = (board: Post[]) => (_req: Request, res: Response) => {
    res.json({ posts: board.slice().reverse() })
  }
  const write = (board: Post[]) => (req: Request, res: Response) => {
    const text = (req.body as { text?: unknown } | undefined)?.text
    if (typeof text !== 'string' || text.trim() === '' || text.length > MAX_TEXT) {
      res.status(400).json({ error: '@bad-request/missing-required-keys' })
      return
    }
    const session = req.campusgate!
    // Keys are checked by introspection (credentials), which names the person.
    if (session.userId === undefined) throw new Error('campusgate named no userId: credentials?')
    const post: Post = {
      id: randomUUID(),
      authorId: session.userId,
      author: session.openId,
      text: text.trim(),
      createdAt: new Date().toISOString(),
    }
    board.push(post)
    res.status(201).json(post)
  }

  app.get('/posts', members, list(boards.public))
  app.post('/posts', members, write(boards.public))
  app.get('/campus/posts', campus, list(boards.campus))
  app.post('/campus/posts', campus, write(boards.campus))
  app.get('/healthz', (_req, res) => void res.json({ status: 'ok' }))

  return { app, client, boards, close: () => client.close() }
}
