// The operator console's one script (its CSP allows no inline script).
// - Times: every <time datetime> with a time of day is written in the browser's language and
//   time zone; the page itself says UTC for a reader without script.
// - Sign-in: takes the link's token from the address's fragment, which no server or proxy ever
//   sees, removes it from the address bar and history, and posts it; on load, and when a link is
//   pasted into a tab already showing the page (only the fragment changes: no reload). The page
//   to return to after sign-in is kept for this tab, since a pasted link does not carry it.
'use strict'
;(function () {
  var lang = document.documentElement.lang || undefined
  var times = document.querySelectorAll('time[datetime]')
  for (var i = 0; i < times.length; i += 1) {
    var stamp = times[i].getAttribute('datetime')
    if (!stamp || stamp.indexOf('T') < 0) continue
    var date = new Date(stamp)
    if (isNaN(date.getTime())) continue
    times[i].title = stamp
    times[i].textContent = date.toLocaleString(lang, { dateStyle: 'medium', timeStyle: 'short' })
  }

  var form = document.getElementById('sign-in')
  var field = document.getElementById('token')
  var next = document.getElementById('next')
  if (!form || !field) return
  var win = document.defaultView
  var key = 'campusgate-console-next'
  try {
    if (next && next.value) win.sessionStorage.setItem(key, next.value)
    else if (next) next.value = win.sessionStorage.getItem(key) || ''
  } catch {
    // Storage refused (private mode): the overview is where sign-in lands then.
  }
  function signIn() {
    var match = /^#token=([A-Za-z0-9_-]{1,256})$/.exec(location.hash)
    if (!match) return
    field.value = match[1]
    win.history.replaceState(null, '', location.pathname + location.search)
    try {
      win.sessionStorage.removeItem(key)
    } catch {
      // As above.
    }
    form.classList.remove('hidden-until-token')
    form.submit()
  }
  win.addEventListener('hashchange', signIn)
  signIn()
})()
