import { CampusgateError } from 'campusgate-miniprogram'
import { campusgate } from '../../campusgate.js'

function describe(error: unknown): string {
  return error instanceof CampusgateError ? `${error.status} ${error.code}` : String(error)
}

Page({
  data: {
    openId: '',
    tier: '',
    email: '',
    message: '',
  },

  onShow() {
    void this.refresh()
  },

  /** Signs in when no key is kept (or the kept one ended), then shows who and which tier. */
  async refresh() {
    try {
      const session = await campusgate.session()
      this.setData({ openId: session.openId, tier: session.tier })
    } catch (error) {
      this.setData({ message: describe(error) })
    }
  },

  onEmailInput(event: WechatMiniprogram.Input) {
    this.setData({ email: event.detail.value })
  },

  /** campusgate mails the confirmation link; opening it and signing in at the university gives tier 2. */
  async askConfirmation() {
    try {
      await campusgate.registerUniversity(this.data.email)
      this.setData({ message: `A confirmation email is on its way to ${this.data.email}.` })
    } catch (error) {
      this.setData({ message: describe(error) })
    }
  },

  openUniversityPage() {
    void wx.navigateTo({ url: '/pages/university/university' })
  },

  async logout() {
    await campusgate.logout()
    this.setData({ openId: '', tier: '', message: 'Signed out.' })
  },

  async erase() {
    const { confirm } = await wx.showModal({
      title: 'Erase your account?',
      content: 'campusgate forgets you; this cannot be undone.',
    })
    if (!confirm) return
    try {
      await campusgate.erase()
      this.setData({ openId: '', tier: '', message: 'Erased.' })
    } catch (error) {
      this.setData({ message: describe(error) })
    }
  },
})
