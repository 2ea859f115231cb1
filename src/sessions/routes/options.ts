import type { MessengerClient } from '../../messenger/client.js'
import type { Sessions } from '../service.js'

/** What the session routes are given. */
export interface SessionRoutesOptions {
  sessions: Sessions
  messenger: MessengerClient
}

/** The times the OpenAPI examples show. */
export const EXAMPLE_TIMES = {
  createdAt: '2026-11-02T08:14:03.000Z',
  lastUsedAt: '2026-11-28T07:51:40.000Z',
  expiresAt: '2026-12-28T07:51:40.000Z',
}
