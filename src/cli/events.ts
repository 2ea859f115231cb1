import type { WebhookDeliveryState } from '../db/schema.js'
import { EXIT, NotFoundError, UsageError, type Command } from './command.js'
import { withServices } from './maintenance.js'

const STATES: readonly WebhookDeliveryState[] = ['pending', 'dead', 'delivered']

const list: Command = {
  name: 'events list',
  summary: 'lifecycle events (webhooks), newest first: id, type, state, tries',
  usage: '  campusgate events list [--state pending|dead|delivered] [--limit <n>] [--json]',
  options: { state: { type: 'string' }, limit: { type: 'string' }, json: { type: 'boolean' } },
  optionHelp: {
    state: 'only events in this state (pending: some endpoint still waits for it)',
    limit: 'at most this many events (default 50)',
    json: 'one JSON object per line',
  },
  async run({ config, values, io }) {
    const state = values.state === undefined ? null : String(values.state)
    if (state !== null && !(STATES as readonly string[]).includes(state)) {
      throw new UsageError('--state must be pending, dead or delivered')
    }
    const limit = values.limit === undefined ? 50 : Number(values.limit)
    if (!Number.isInteger(limit) || limit < 1 || limit > 10_000) {
      throw new UsageError('--limit must be a whole number from 1 to 10000')
    }
    return withServices(config, io, async ({ webhookEvents }) => {
      const events = await webhookEvents.list({
        state: state as WebhookDeliveryState | null,
        limit,
      })
      for (const event of events) {
        const view = {
          id: event.id,
          type: event.type,
          state: event.state,
          tries: event.tries,
          createdAt: new Date(event.createdAt).toISOString(),
          lastError: event.lastError,
        }
        io.out(
          values.json === true
            ? `${JSON.stringify(view)}\n`
            : `${view.id}  ${view.type.padEnd(19)}  ${view.state.padEnd(9)}  tries ${view.tries}` +
                `  ${view.createdAt}` +
                (view.lastError === null ? '' : `  last error: ${view.lastError}`) +
                '\n',
        )
      }
      return EXIT.ok
    })
  },
}

const retry: Command = {
  name: 'events retry',
  summary: 'send a dead event again (same id); a running service delivers it within seconds',
  usage: '  campusgate events retry <eventId>',
  options: {},
  positionals: ['eventId'],
  async run({ config, values, io }) {
    const id = String(values.eventId)
    return withServices(config, io, async ({ webhookEvents }) => {
      const outcome = await webhookEvents.retry(id)
      if (outcome === 'not-found') throw new NotFoundError(`no event ${id}`)
      if (outcome === 'not-dead')
        throw new NotFoundError(`event ${id} is not dead; nothing changed`)
      io.out(`event ${id} is pending again\n`)
      return EXIT.ok
    })
  },
}

const replay: Command = {
  name: 'events replay',
  summary: 'send a delivered event again (same id), to every endpoint that got it',
  usage: '  campusgate events replay <eventId>',
  options: {},
  positionals: ['eventId'],
  async run({ config, values, io }) {
    const id = String(values.eventId)
    return withServices(config, io, async ({ webhookEvents }) => {
      const outcome = await webhookEvents.replay(id)
      if (outcome === 'not-found') throw new NotFoundError(`no event ${id}`)
      if (outcome === 'not-delivered') {
        throw new NotFoundError(`event ${id} has not been delivered yet; nothing changed`)
      }
      io.out(`event ${id} will be sent again\n`)
      return EXIT.ok
    })
  },
}

export const eventCommands: readonly Command[] = [list, retry, replay]
