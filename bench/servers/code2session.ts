// A WeChat-like code2session endpoint in its own process, so POST /register/messenger pays a real
// loopback HTTP round trip. Every login code is accepted once the app's credentials match; the
// openid is derived from the code, so each distinct code registers a new user.
// Usage: node --import tsx bench/servers/code2session.ts  (PORT)
import { randomBytes } from 'node:crypto'
import { createServer } from 'node:http'
import { BENCH_APP } from '../harness/bench-app.js'

const server = createServer((request, response) => {
  const url = new URL(request.url ?? '/', 'http://localhost')
  const query = url.searchParams
  let answer: object
  if (url.pathname !== '/sns/jscode2session') {
    response.writeHead(404).end()
    return
  } else if (query.get('appid') !== BENCH_APP.appId) {
    answer = { errcode: 40013, errmsg: 'invalid appid' }
  } else if (query.get('secret') !== BENCH_APP.appSecret) {
    answer = { errcode: 40125, errmsg: 'invalid appsecret' }
  } else if (!query.get('js_code')) {
    answer = { errcode: 41008, errmsg: 'missing code' }
  } else {
    const openid = `o-${query.get('js_code')}`
    answer = { openid, session_key: randomBytes(16).toString('base64'), unionid: `u-${openid}` }
  }
  // As WeChat does: HTTP 200 whatever the outcome, JSON labelled text/plain.
  response.writeHead(200, { 'content-type': 'text/plain' }).end(JSON.stringify(answer))
})
server.keepAliveTimeout = 60_000
server.listen(Number(process.env.PORT), '127.0.0.1')
