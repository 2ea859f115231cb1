// The kit's copy of the wire, held against campusgate's own OpenAPI document (GET /openapi.json of
// the running app): a change on either side fails here until the other follows. The lists of
// fields below are checked against the kit's types by the compiler, and against the document by
// the test.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import {
  ERROR_CODES,
  EVENT_TYPES,
  MEDIA_TYPE,
  SESSION_ENDED_REASONS,
  TIERS,
  UNIVERSITY_UNLINKED_REASONS,
  type EventData,
  type EventType,
  type Session,
} from 'campusgate-node'
import { startService, type RunningService } from '../../../test/helpers/service.js'

type RequiredKeys<T> = { [K in keyof T]-?: object extends Pick<T, K> ? never : K }[keyof T]

/** Every member of the union U, each once: one missing or unknown fails the compile. */
const all =
  <U extends string>() =>
  <const L extends readonly U[]>(list: L & ([U] extends [L[number]] ? unknown : never)): L =>
    list

/** The kit's fields of an object type: all of them, and the required ones. */
interface Fields {
  all: readonly string[]
  required: readonly string[]
}

type University = NonNullable<Session['university']>

/** GET /session's fields: the kit's Session without userId, which introspection alone names. */
const SESSION: Fields = {
  all: all<Exclude<keyof Session, 'userId'>>()([
    'sessionId',
    'openId',
    'appId',
    'platform',
    'tier',
    'expiresAt',
    'university',
  ]),
  required: all<RequiredKeys<Session>>()(['sessionId', 'openId', 'platform', 'tier', 'expiresAt']),
}
const UNIVERSITY: Fields = {
  all: all<keyof University>()(['subject', 'email', 'name', 'isStudent', 'linkedAt']),
  required: all<RequiredKeys<University>>()(['linkedAt']),
}
const ids = ['userId', 'openId'] as const
const EVENT_DATA: { [T in EventType]: Fields } = {
  'user.created': {
    all: all<keyof EventData['user.created']>()(ids),
    required: all<RequiredKeys<EventData['user.created']>>()(ids),
  },
  'session.started': {
    all: all<keyof EventData['session.started']>()([
      ...ids,
      'sessionId',
      'expiresAt',
      'appId',
      'platform',
    ]),
    required: all<RequiredKeys<EventData['session.started']>>()([
      ...ids,
      'sessionId',
      'expiresAt',
      'platform',
    ]),
  },
  'session.ended': {
    all: all<keyof EventData['session.ended']>()([...ids, 'sessionId', 'reason']),
    required: all<RequiredKeys<EventData['session.ended']>>()([...ids, 'sessionId', 'reason']),
  },
  'university.linked': {
    all: all<keyof EventData['university.linked']>()([...ids, 'university']),
    required: all<RequiredKeys<EventData['university.linked']>>()([...ids, 'university']),
  },
  'university.unlinked': {
    all: all<keyof EventData['university.unlinked']>()([...ids, 'reason']),
    required: all<RequiredKeys<EventData['university.unlinked']>>()([...ids, 'reason']),
  },
  'user.erased': {
    all: all<keyof EventData['user.erased']>()(ids),
    required: all<RequiredKeys<EventData['user.erased']>>()(ids),
  },
  'user.suspended': {
    all: all<keyof EventData['user.suspended']>()([...ids, 'reason']),
    required: all<RequiredKeys<EventData['user.suspended']>>()([...ids, 'reason']),
  },
  'user.restored': {
    all: all<keyof EventData['user.restored']>()(ids),
    required: all<RequiredKeys<EventData['user.restored']>>()(ids),
  },
}

type Schema = {
  type?: string
  required?: string[]
  properties?: Record<string, Schema>
  enum?: string[]
  const?: string
}
type Response = { content?: Record<string, { schema: Schema }> }
type Operation = { responses: Record<string, Response> }
type Document = {
  paths: Record<string, Record<string, Operation>>
  webhooks: Record<
    string,
    { post: { requestBody: { content: Record<string, { schema: Schema }> } } }
  >
  components: { responses: Record<string, Response> }
}

const sorted = (list: readonly string[] | undefined) => [...(list ?? [])].sort()

function assertFields(schema: Schema, fields: Fields, what: string): void {
  assert.deepEqual(
    sorted(Object.keys(schema.properties ?? {})),
    sorted(fields.all),
    `${what}: fields`,
  )
  assert.deepEqual(sorted(schema.required), sorted(fields.required), `${what}: required fields`)
}

describe("campusgate-node's wire is campusgate's OpenAPI document", () => {
  let service: RunningService
  let document: Document

  before(async () => {
    // With a backend, so that POST /introspect is served and documented.
    service = await startService({ BACKEND_CREDENTIALS: 'forum:forum-secret' })
    const response = await fetch(`${service.url}/openapi.json`)
    assert.equal(response.status, 200)
    document = (await response.json()) as Document
  })
  after(() => service.close())

  const getSession = () => document.paths['/session'].get

  it('has the media type GET /session answers in', () => {
    for (const [status, response] of Object.entries(getSession().responses)) {
      assert.deepEqual(Object.keys(response.content ?? {}), [MEDIA_TYPE], `GET /session ${status}`)
    }
  })

  it('has the session as GET /session answers it, with its tiers and university fields', () => {
    const schema = getSession().responses['200'].content![MEDIA_TYPE].schema
    assertFields(schema, SESSION, 'the session')
    assert.deepEqual(sorted(schema.properties!.tier.enum), sorted(TIERS))
    assertFields(schema.properties!.university, UNIVERSITY, 'the university')
  })

  it("answers with campusgate's own error codes, at their statuses", () => {
    // Every code the document lists, with the statuses its operations answer it at. The shared
    // responses (a route's own requireTier) are listed without one.
    const statuses = new Map<string, Set<string>>()
    const note = (code: string, status?: string) => {
      if (!statuses.has(code)) statuses.set(code, new Set())
      if (status !== undefined) statuses.get(code)!.add(status)
    }
    const codesOf = (response: Response) =>
      response.content?.[MEDIA_TYPE]?.schema.properties?.error?.enum ?? []
    for (const item of Object.values(document.paths)) {
      for (const operation of Object.values(item)) {
        for (const [status, response] of Object.entries(operation.responses ?? {})) {
          for (const code of codesOf(response)) note(code, status)
        }
      }
    }
    for (const response of Object.values(document.components.responses)) {
      for (const code of codesOf(response)) note(code)
    }
    const { sessionServiceUnavailable, ...campusgates } = ERROR_CODES
    for (const [name, { status, code }] of Object.entries(campusgates)) {
      const documented = statuses.get(code)
      assert.ok(documented !== undefined, `${name}: ${code} is one of campusgate's codes`)
      if (documented.size > 0) assert.ok(documented.has(String(status)), `${name}: ${status}`)
    }
    // The kit's own row, for when campusgate cannot be asked, is not one of campusgate's codes.
    assert.equal(statuses.has(sessionServiceUnavailable.code), false)
  })

  it('has the event types, their data and their reasons as campusgate sends them', () => {
    assert.deepEqual(sorted(Object.keys(document.webhooks)), sorted(EVENT_TYPES))
    for (const type of EVENT_TYPES) {
      const body = document.webhooks[type].post.requestBody.content['application/json'].schema
      assert.equal(body.properties!.type.const, type)
      assertFields(
        body,
        { all: ['type', 'timestamp', 'data'], required: ['type', 'timestamp', 'data'] },
        type,
      )
      assertFields(body.properties!.data, EVENT_DATA[type], `${type} data`)
    }
    const reasons = (type: EventType) =>
      sorted(
        document.webhooks[type].post.requestBody.content['application/json'].schema.properties!.data
          .properties!.reason.enum,
      )
    assert.deepEqual(reasons('session.ended'), sorted(SESSION_ENDED_REASONS))
    assert.deepEqual(reasons('university.unlinked'), sorted(UNIVERSITY_UNLINKED_REASONS))
    const university =
      document.webhooks['university.linked'].post.requestBody.content['application/json'].schema
        .properties!.data.properties!.university
    assertFields(university, UNIVERSITY, 'university.linked data.university')
  })

  it('reads the POST /introspect answer the document describes, in application/json', () => {
    const operation = document.paths['/introspect'].post
    assert.deepEqual(Object.keys(operation.responses['200'].content ?? {}), ['application/json'])
    const schema = operation.responses['200'].content!['application/json'].schema
    // What sessionFromIntrospection reads: active, sub (the Session's userId), sid, openId, tier,
    // exp and university.
    const properties = schema.properties!
    assert.equal(properties.active.type, 'boolean')
    assert.equal(properties.sub.type, 'string')
    assert.equal(properties.sid.type, 'string')
    assert.equal(properties.openId.type, 'string')
    assert.deepEqual(sorted(properties.tier.enum), sorted(TIERS))
    assert.equal(properties.exp.type, 'integer')
    assertFields(properties.university, UNIVERSITY, 'the introspected university')
    assert.deepEqual(schema.required, ['active'])
  })
})
