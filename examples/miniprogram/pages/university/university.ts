import { CampusgateError } from 'campusgate-miniprogram'
import { campusgate } from '../../campusgate.js'

/** Opens only at tier 2 (university-registered); everyone else is sent back. */
Page({
  data: {
    name: '',
  },

  async onLoad() {
    let title = 'Confirm your university email first'
    try {
      const session = await campusgate.session()
      if (session.tier === 'university-registered') {
        this.setData({ name: session.university?.name ?? session.openId })
        return
      }
    } catch (error) {
      title = error instanceof CampusgateError ? error.code : String(error)
    }
    await wx.showToast({ title, icon: 'none' })
    void wx.navigateBack()
  },
})
