// The operator console's one script (its CSP allows no inline script).
// - Times: every <time datetime> with a time of day is written in the browser's language and
//   time zone; the page itself says UTC for a reader without script.
// - Sign-in: takes the link's token from the address's fragment, which no server or proxy ever
//   sees, removes it from the address bar and history, asks the server (a same-origin POST, the
//   token in the body) whom it signs in as, and offers one button saying so; the operator's press
//   posts it. On load, and when a link is pasted into a tab already showing the page (only the
//   fragment changes: no reload). The page to return to after sign-in is kept for this tab,
//   since a pasted link does not carry it.
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
  var status = document.getElementById('link-status')
  var switching = document.getElementById('switching')
  if (!form || !field || !status || !switching) return
  var win = document.defaultView
  var key = 'campusgate-console-next'
  try {
    if (next && next.value) win.sessionStorage.setItem(key, next.value)
    else if (next) next.value = win.sessionStorage.getItem(key) || ''
  } catch {
    // Storage refused (private mode): the overview is where sign-in lands then.
  }
  var asked = 0
  // Never signs in by itself: the server says whom the link signs in as (and whom this browser
  // is signed in as now), and only then is there a button, which the operator presses.
  function describe() {
    var match = /^#token=([A-Za-z0-9_-]{1,256})$/.exec(location.hash)
    if (!match) return
    win.history.replaceState(null, '', location.pathname + location.search)
    var token = match[1]
    var ask = (asked += 1)
    var old = form.querySelector('button')
    if (old) old.remove()
    form.hidden = true
    field.value = ''
    status.textContent = status.getAttribute('data-checking')
    win
      .fetch(form.getAttribute('data-describe'), {
        method: 'POST',
        credentials: 'same-origin',
        headers: { accept: 'application/json' },
        body: new URLSearchParams({ token: token }),
      })
      .then(function (response) {
        return response.json().then(function (body) {
          return { ok: response.ok, body: body }
        })
      })
      .then(function (answer) {
        if (ask !== asked) return
        if (!answer.ok) {
          status.textContent = answer.body.message || status.getAttribute('data-failed')
          return
        }
        status.textContent = ''
        field.value = token
        switching.textContent = answer.body.switching || ''
        switching.hidden = !answer.body.switching
        var button = document.createElement('button')
        button.type = 'submit'
        button.textContent = answer.body.button
        form.appendChild(button)
        form.hidden = false
        try {
          win.sessionStorage.removeItem(key)
        } catch {
          // As above.
        }
      })
      .catch(function () {
        if (ask === asked) status.textContent = status.getAttribute('data-failed')
      })
  }
  win.addEventListener('hashchange', describe)
  describe()
})()
