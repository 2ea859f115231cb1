// The operator console's one script (its CSP allows no inline script). On the sign-in page it
// takes the token from the address's fragment, which no server or proxy ever sees, removes it
// from the address bar and history, and posts it.
'use strict'
;(function () {
  var form = document.getElementById('sign-in')
  var field = document.getElementById('token')
  if (!form || !field) return
  var match = /^#token=([A-Za-z0-9_-]{1,256})$/.exec(location.hash)
  if (!match) return
  field.value = match[1]
  document.defaultView.history.replaceState(null, '', location.pathname + location.search)
  form.classList.remove('hidden-until-token')
  form.submit()
})()
