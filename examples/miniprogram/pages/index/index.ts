import { abortable, ABORTED, CampusgateError, type Session } from 'campusgate-miniprogram'
import { campusgate } from '../../campusgate.js'

function describe(error: unknown): string {
  return error instanceof CampusgateError ? `${error.status} ${error.code}` : String(error)
}

/** The wait for tier 2 in progress, stopped whenever the page is hidden. */
let wait: ReturnType<typeof abortable> | null = null

function stopWaiting(): void {
  wait?.abort()
  wait = null
}

Page({
  data: {
    openId: '',
    tier: '',
    email: '',
    /** The confirmation email was sent and tier 2 has not arrived yet. */
    emailSent: false,
    message: '',
  },

  onShow(): Promise<void> {
    return this.refresh()
  },

  // Opening the emailed link leaves the mini-program: nothing polls while it is away.
  onHide(): void {
    stopWaiting()
  },

  onUnload(): void {
    stopWaiting()
  },

  /** Signs in when no key is kept (or the kept one ended), then shows who and which tier. */
  async refresh(): Promise<void> {
    try {
      const session = await campusgate.session()
      this.show(session)
      if (this.data.emailSent && session.tier === 'messenger-registered') {
        await this.waitForUniversity()
      }
    } catch (error) {
      this.setData({ message: describe(error) })
    }
  },

  show(session: Session): void {
    this.setData({ openId: session.openId, tier: session.tier })
    if (session.tier === 'university-registered') this.setData({ emailSent: false })
  },

  onEmailInput(event: WechatMiniprogram.Input): void {
    this.setData({ email: event.detail.value })
  },

  /** Only on the user's tap: each call mails a new link. */
  async askConfirmation(): Promise<void> {
    try {
      await campusgate.registerUniversity(this.data.email)
    } catch (error) {
      this.setData({ message: describe(error) })
      return
    }
    this.setData({
      emailSent: true,
      message: `A confirmation email is on its way to ${this.data.email}.`,
    })
    await this.waitForUniversity()
  },

  /** Shows tier 2 as soon as the user has opened the link and signed in at the university. */
  async waitForUniversity(): Promise<void> {
    stopWaiting()
    const current = abortable()
    wait = current
    try {
      const session = await campusgate.waitForTier('university-registered', {
        timeoutMs: 10 * 60_000,
        signal: current.signal,
      })
      this.show(session)
      this.setData({ emailSent: false, message: 'University email confirmed.' })
    } catch (error) {
      // Hidden: onShow takes the wait up again.
      if (error instanceof CampusgateError && error.code === ABORTED) return
      this.setData({ message: describe(error) })
    } finally {
      if (wait === current) wait = null
    }
  },

  openUniversityPage(): void {
    void wx.navigateTo({ url: '/pages/university/university' })
  },

  openForum(): void {
    void wx.navigateTo({ url: '/pages/forum/forum' })
  },

  async logout(): Promise<void> {
    stopWaiting()
    try {
      await campusgate.logout()
      this.setData({ openId: '', tier: '', emailSent: false, message: 'Signed out.' })
    } catch (error) {
      this.setData({ message: describe(error) })
    }
  },

  async erase(): Promise<void> {
    const { confirm } = await wx.showModal({
      title: 'Erase your account?',
      content: 'campusgate forgets you; this cannot be undone.',
    })
    if (!confirm) return
    stopWaiting()
    try {
      await campusgate.erase()
      this.setData({ openId: '', tier: '', emailSent: false, message: 'Erased.' })
    } catch (error) {
      this.setData({ message: describe(error) })
    }
  },
})
