import type { Clock } from '../clock.js'
import type { Queryable } from '../db/schema.js'
import { offsetOf, PAGE_SIZE, type Paged } from '../lib/paging.js'
import { listMail, pageMail, retryQueuedMail, type MailState, type MailView } from './outbox.js'

export type { MailState, MailView }

/** A mail row as the operator sees it: never its bodies, which hold live links. */
export type MailListing = Awaited<ReturnType<typeof listMail>>[number]

/** The outbox as the operator's commands use it. */
export interface Outbox {
  /** Mail rows, newest first; queued only unless `includeFinished`. */
  list(options: {
    includeFinished: boolean
    limit: number
    userId?: string
  }): Promise<MailListing[]>
  /** One page of mail in one state (null: any), newest first, and how many in all. */
  page(filter: { state: MailState | null; userId?: string }, page: number): Promise<Paged<MailView>>
  /** How many of the user's mails are queued, sent and abandoned. */
  countsOfUser(userId: string): Promise<Record<MailState, number>>
  /**
   * Makes queued mail (one, or all) due now, ending its backoff, unless its link has expired;
   * returns how many.
   */
  retry(mailId: string | null): Promise<number>
}

export function createOutbox(options: {
  db: Queryable
  clock: Clock
  /** Told after mail was made due, so a worker in this process delivers it at once. */
  onDue?: () => void
}): Outbox {
  const { db, clock } = options
  return {
    list: (query) => listMail(db, query),

    async page(filter, page) {
      return { ...(await pageMail(db, filter, offsetOf(page), PAGE_SIZE)), page }
    },

    async countsOfUser(userId) {
      const mails = await listMail(db, { includeFinished: true, limit: 1000, userId })
      const counts: Record<MailState, number> = { queued: 0, sent: 0, abandoned: 0 }
      for (const mail of mails) counts[mail.state] += 1
      return counts
    },

    async retry(mailId) {
      const due = await retryQueuedMail(db, clock.now().getTime(), mailId)
      if (due > 0) options.onDue?.()
      return due
    },
  }
}
