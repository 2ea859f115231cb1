import { CampusgateError } from 'campusgate-miniprogram'
import { campusgate } from '../../campusgate.js'
import { config } from '../../config.js'

/** A post as the forum answers it. */
interface Post {
  id: string
  author: string
  text: string
  createdAt: string
}

const INSUFFICIENT_TIER = '@forbidden/insufficient-registration-tier'

function describe(error: unknown): string {
  return error instanceof CampusgateError ? `${error.status} ${error.code}` : String(error)
}

/** Stops listening to the kit's session changes when the page unloads. */
let stopListening: (() => void) | null = null

/**
 * The forum, on the app's own backend (examples/forum): every signed-in user reads and writes the
 * public board; the campus board opens at tier 2. The kit sends the session key to the forum, and
 * signs in again by itself when the forum says the key has ended.
 */
Page({
  data: {
    posts: [] as Post[],
    campusPosts: [] as Post[],
    /** Whether the forum let this user into the campus board (tier 2). */
    campusOpen: false,
    text: '',
    message: '',
  },

  onLoad(): void {
    stopListening = campusgate.onSessionChange(({ reason, session }) => {
      // This device had been signed out (a logout elsewhere, an operator, expiry): say so.
      if (reason === 'renewed') {
        this.setData({
          message: `This device was signed out and has signed in again (${session?.tier ?? 'tier unknown'}).`,
        })
      }
    })
  },

  onUnload(): void {
    stopListening?.()
    stopListening = null
  },

  onShow(): Promise<void> {
    return this.refresh()
  },

  async refresh(): Promise<void> {
    try {
      const board = await campusgate.request<{ posts: Post[] }>({ url: `${config.forumUrl}/posts` })
      this.setData({ posts: board.data.posts })
    } catch (error) {
      this.setData({ message: describe(error) })
      return
    }
    try {
      const campus = await campusgate.request<{ posts: Post[] }>({
        url: `${config.forumUrl}/campus/posts`,
      })
      this.setData({ campusOpen: true, campusPosts: campus.data.posts })
    } catch (error) {
      // Tier 1: the campus board stays closed, which is no error to show.
      this.setData({ campusOpen: false, campusPosts: [] })
      if (!(error instanceof CampusgateError && error.code === INSUFFICIENT_TIER)) {
        this.setData({ message: describe(error) })
      }
    }
  },

  onTextInput(event: WechatMiniprogram.Input): void {
    this.setData({ text: event.detail.value })
  },

  async post(): Promise<void> {
    await this.send('/posts')
  },

  async postToCampus(): Promise<void> {
    await this.send('/campus/posts')
  },

  async send(board: string): Promise<void> {
    try {
      await campusgate.request({
        url: `${config.forumUrl}${board}`,
        method: 'POST',
        data: { text: this.data.text },
      })
      this.setData({ text: '', message: 'Posted.' })
      await this.refresh()
    } catch (error) {
      this.setData({ message: describe(error) })
    }
  },
})
