import { PLATFORMS } from '../messenger/platforms/index.js'
import {
  EVENT_TYPES,
  SESSION_END_REASONS,
  SUSPENSION_REASON_MAX,
  UNLINK_REASONS,
  type EventType,
} from './types.js'

/*
 * The `webhooks` section of the OpenAPI document (OpenAPI 3.1): what campusgate POSTs to each
 * WEBHOOK_URL endpoint, one entry per event type. Kept beside the types it describes.
 */

const ids = {
  userId: {
    type: 'string',
    description: "campusgate's id of the person: the same in every app and on every platform.",
  },
  openId: {
    type: 'string',
    description:
      "The messenger openId: the session's own for a session's events, else the person's first.",
  },
} as const

const university = {
  type: 'object',
  description:
    'The university identity as `GET /session` shows it; fields the provider did not give are absent.',
  required: ['linkedAt'],
  additionalProperties: false,
  properties: {
    subject: { type: 'string' },
    email: {
      type: 'string',
      description: "The member's university address, as the provider gave it.",
    },
    name: { type: 'string' },
    isStudent: { type: 'boolean' },
    linkedAt: { type: 'string', format: 'date-time' },
  },
} as const

/** What `data` carries besides the two ids, per type. */
const extra: Record<EventType, { required: string[]; properties: Record<string, unknown> }> = {
  'user.created': { required: [], properties: {} },
  'session.started': {
    required: ['sessionId', 'expiresAt', 'platform'],
    properties: {
      sessionId: { type: 'string', description: 'Names the session (not its key).' },
      expiresAt: { type: 'string', format: 'date-time' },
      appId: {
        type: 'string',
        description:
          'The app it registered from (absent for a session imported from the original server).',
      },
      platform: {
        type: 'string',
        enum: [...PLATFORMS.keys()],
        description: "That app's messenger platform (docs/identities.md).",
      },
    },
  },
  'session.ended': {
    required: ['sessionId', 'reason'],
    properties: {
      sessionId: { type: 'string' },
      reason: { type: 'string', enum: [...SESSION_END_REASONS] },
    },
  },
  'university.linked': { required: ['university'], properties: { university } },
  'university.unlinked': {
    required: ['reason'],
    properties: { reason: { type: 'string', enum: [...UNLINK_REASONS] } },
  },
  'user.erased': { required: [], properties: {} },
  'user.suspended': {
    required: ['reason'],
    properties: {
      reason: {
        type: ['string', 'null'],
        maxLength: SUSPENSION_REASON_MAX,
        description: "The operator's reason, as they wrote it; null when they gave none.",
      },
    },
  },
  'user.restored': { required: [], properties: {} },
}

const summaries: Record<EventType, string> = {
  'user.created':
    'A person registered for the first time (a new identity of a known person is not one).',
  'session.started': 'A registration issued a session key.',
  'session.ended':
    'A session ended: logout, expiry, rotation by a new registration, revocation, erasure or suspension.',
  'university.linked': 'The user proved university membership (tier 2).',
  'university.unlinked':
    'The user lost tier 2: logout, expiry, a lapsed link, erasure, revocation or suspension.',
  'user.erased': 'The user asked to be erased: delete what your feature keeps about them.',
  'user.suspended':
    'An operator suspended the person: every session ended, and registration is refused until restored.',
  'user.restored': 'An operator lifted the suspension: the person may register again.',
}

const header = (name: string, description: string) => ({
  name,
  in: 'header',
  required: true,
  description,
  schema: { type: 'string' },
})

const operationIds: Record<EventType, string> = {
  'user.created': 'userCreatedEvent',
  'session.started': 'sessionStartedEvent',
  'session.ended': 'sessionEndedEvent',
  'university.linked': 'universityLinkedEvent',
  'university.unlinked': 'universityUnlinkedEvent',
  'user.erased': 'userErasedEvent',
  'user.suspended': 'userSuspendedEvent',
  'user.restored': 'userRestoredEvent',
}

function webhookOf(type: EventType) {
  return {
    post: {
      operationId: operationIds[type],
      summary: summaries[type],
      description:
        'Signed as Standard Webhooks says (verify with the `standardwebhooks` package and a ' +
        'WEBHOOK_SECRET). A 2xx within 10 s is delivery; anything else is tried again with ' +
        'backoff for WEBHOOK_RETRY_FOR, with the same `webhook-id`. Events of one user arrive in ' +
        'the order they happened.',
      tags: ['lifecycle events'],
      security: [],
      parameters: [
        header('webhook-id', "The event's id: the same on every try; deduplicate on it."),
        header('webhook-timestamp', 'Seconds since the epoch when this try was signed.'),
        header('webhook-signature', 'One `v1,<base64>` per WEBHOOK_SECRET, space-separated.'),
      ],
      requestBody: {
        required: true,
        content: {
          'application/json': {
            schema: {
              type: 'object',
              required: ['type', 'timestamp', 'data'],
              additionalProperties: false,
              properties: {
                type: { type: 'string', const: type },
                timestamp: {
                  type: 'string',
                  format: 'date-time',
                  description: 'When the change happened.',
                },
                data: {
                  type: 'object',
                  required: ['userId', 'openId', ...extra[type].required],
                  additionalProperties: false,
                  properties: { ...ids, ...extra[type].properties },
                },
              },
            },
          },
        },
      },
      responses: {
        '200': { description: 'Received (any 2xx within 10 s).' },
        '400': { description: 'Refused (a bad signature): tried again until WEBHOOK_RETRY_FOR.' },
      },
    },
  }
}

/** The `webhooks` object of the OpenAPI document. */
export function webhooksDocument(): Record<string, unknown> {
  return Object.fromEntries(EVENT_TYPES.map((type) => [type, webhookOf(type)]))
}
