// The playground's script, served at /_sandbox/playground.js (the page's policy runs only
// same-origin scripts). Plain ES2020 for any current browser; its words come from the page's
// JSON block, so it has no language of its own.
'use strict'
;(function () {
  var strings = JSON.parse(document.getElementById('playground-strings').textContent)
  var lang = document.documentElement.lang
  var state = {}
  var LINK = /https?:\/\/\S+universityRegistrationCode=[A-Za-z0-9_-]+/

  function mask(secret) {
    return secret.length <= 12 ? '…' : secret.slice(0, 4) + '…' + secret.slice(-4)
  }
  // The session key is shown masked wherever it appears: in headers, bodies and answers.
  function redact(text) {
    return state.sessionKey ? text.split(state.sessionKey).join(mask(state.sessionKey)) : text
  }
  function pretty(text) {
    try {
      return JSON.stringify(JSON.parse(text), null, 2)
    } catch {
      return text
    }
  }
  function show(step, lines) {
    var out = document.querySelector('[data-output="' + step + '"]')
    out.hidden = false
    out.textContent = redact(lines.join('\n'))
  }
  function setState(name, value) {
    var field = document.querySelector('[data-state="' + name + '"]')
    if (field) field.textContent = value || '—'
  }
  function refresh() {
    setState('openId', state.openId)
    setState('sessionKey', state.sessionKey && mask(state.sessionKey))
    setState('tier', state.tier)
    document.querySelectorAll('[data-needs]').forEach(function (button) {
      button.disabled = !state[button.getAttribute('data-needs')] || state.busy
    })
  }
  function pathOf(url) {
    var parsed = new URL(url, location.href)
    return parsed.pathname + parsed.search
  }
  function describeRequest(method, path, headers, body) {
    var lines = ['→ ' + method + ' ' + path]
    Object.keys(headers).forEach(function (name) {
      lines.push('  ' + name + ': ' + headers[name])
    })
    if (body) lines.push('  ' + body)
    return lines
  }
  async function send(step, method, path, options) {
    options = options || {}
    var headers = Object.assign({ 'accept-language': lang }, options.headers || {})
    if (state.sessionKey && options.auth) headers.authorization = state.sessionKey
    var lines = describeRequest(method, options.shownPath || path, headers, options.body)
    var response = await fetch(path, {
      method: method,
      headers: headers,
      body: options.body,
      credentials: 'same-origin',
    })
    var text = await response.text()
    if (response.redirected)
      lines.push('← ' + strings.redirected + ' ' + (options.shownUrl || pathOf)(response.url))
    lines.push('← ' + response.status + ' ' + (response.headers.get('content-type') || ''))
    if (!options.html) lines.push(pretty(text))
    var json = null
    try {
      json = JSON.parse(text)
    } catch {
      // Not JSON: the text alone is the answer.
    }
    return { response: response, text: text, json: json, lines: lines }
  }
  function jsonHeaders() {
    return { 'content-type': 'application/json' }
  }

  var steps = {
    mint: async function () {
      var answer = await send('mint', 'POST', '/_sandbox/messenger/login-codes')
      show('mint', answer.lines)
      if (answer.json && answer.json.code) {
        state.code = answer.json.code
        state.openId = answer.json.openId
      }
    },
    register: async function () {
      var body = JSON.stringify({
        appId: strings.appId,
        appSecret: strings.appSecret,
        code: state.code,
      })
      var answer = await send('register', 'POST', '/register/messenger', {
        headers: jsonHeaders(),
        body: body,
      })
      state.code = null
      if (answer.json && answer.json.sessionKey) {
        state.sessionKey = answer.json.sessionKey
        state.tier = null
      }
      show('register', answer.lines)
    },
    session: async function (step) {
      var answer = await send(step, 'GET', '/session', { auth: true })
      show(step, answer.lines)
      state.tier = answer.json && answer.json.tier
    },
    email: async function () {
      var email = document.getElementById('email').value.trim()
      var body = JSON.stringify({ email: email })
      var answer = await send('email', 'POST', '/register/university', {
        auth: true,
        headers: jsonHeaders(),
        body: body,
      })
      show('email', answer.lines)
      if (answer.response.ok) state.email = email
    },
    mail: async function () {
      var path = '/_sandbox/mailbox?to=' + encodeURIComponent(state.email)
      show('mail', ['→ GET ' + path, strings.waiting])
      // The outbox delivers in the background: wait for a mail not read before.
      for (var attempt = 0; attempt < 40; attempt++) {
        var answer = await send('mail', 'GET', path)
        var mail = answer.json && answer.json.mails && answer.json.mails[0]
        if (mail && mail.id !== state.readMail) {
          state.readMail = mail.id
          var link = LINK.exec(mail.text)
          state.link = link && link[0]
          show(
            'mail',
            answer.lines.slice(0, 2).concat([strings.subject + ' ' + mail.subject, '', mail.text]),
          )
          return
        }
        await new Promise(function (resolve) {
          setTimeout(resolve, 250)
        })
      }
      show('mail', ['→ GET ' + path, strings.noMail])
    },
    link: async function () {
      var answer = await send('link', 'GET', pathOf(state.link), {
        html: true,
        headers: { accept: 'text/html' },
      })
      state.link = null
      var page = new DOMParser().parseFromString(answer.text, 'text/html')
      answer.lines.push(page.title)
      show('link', answer.lines)
      if (answer.response.ok && answer.response.redirected) state.authorise = answer.response.url
    },
    decide: async function (decision) {
      var at = new URL(state.authorise)
      var form = new URLSearchParams(at.search)
      form.delete('lang')
      form.set('member', document.getElementById('member').value)
      form.set('decision', decision)
      var answer = await send('decide', 'POST', at.pathname + '/decision', {
        html: true,
        headers: { accept: 'text/html', 'content-type': 'application/x-www-form-urlencoded' },
        body: form.toString(),
        // The callback's query carries the authorisation code: shown masked.
        shownUrl: function (url) {
          var callback = new URL(url)
          callback.searchParams.forEach(function (value, name) {
            if (name === 'code' || name === 'client_secret')
              callback.searchParams.set(name, mask(value))
          })
          return decodeURIComponent(callback.pathname + callback.search)
        },
      })
      state.authorise = null
      var page = new DOMParser().parseFromString(answer.text, 'text/html')
      var main = page.querySelector('.primary main') || page.body
      main.querySelectorAll('h1, p').forEach(function (node) {
        answer.lines.push(node.textContent.trim())
      })
      show('decide', answer.lines)
    },
    logout: async function () {
      var answer = await send('logout', 'POST', '/logout', { auth: true })
      var check = await send('logout', 'GET', '/session', { auth: true })
      show('logout', answer.lines.concat([''], check.lines))
      state.sessionKey = null
      state.tier = null
      state.email = null
      state.readMail = null
    },
  }

  document.querySelectorAll('[data-action]').forEach(function (button) {
    button.addEventListener('click', async function () {
      var action = button.getAttribute('data-action')
      state.busy = true
      refresh()
      try {
        if (action === 'allow' || action === 'deny') await steps.decide(action)
        else if (action === 'session-again') await steps.session('session-again')
        else if (action === 'session') await steps.session('session')
        else await steps[action]()
      } catch (error) {
        show(button.getAttribute('data-step') || action, [strings.failed + ' ' + error])
      } finally {
        state.busy = false
        refresh()
      }
    })
  })
  refresh()
  document.body.setAttribute('data-playground', 'ready')
})()
