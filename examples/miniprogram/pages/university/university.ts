import { campusgate } from '../../campusgate.js'

/** Opens only at tier 2 (university-registered); everyone else is sent back. */
Page({
  data: {
    name: '',
  },

  async onLoad() {
    const session = await campusgate.session()
    if (session.tier !== 'university-registered') {
      await wx.showToast({ title: 'Confirm your university email first', icon: 'none' })
      void wx.navigateBack()
      return
    }
    this.setData({ name: session.university?.name ?? session.openId })
  },
})
