// An app backend in Express with one guarded route, GET /profile (tier 1), in front of campusgate
// at UPSTREAM: `kit` guards it with campusgate-node's requireTier, `fetch` calls GET /session
// with plain fetch and answers as the kit would. npm run bench compares the two.
import express from 'express'
import { createClient, MEDIA_TYPE } from 'campusgate-node'
import { requireTier } from 'campusgate-node/express'

const mode = process.argv[2]
const upstream = process.env.UPSTREAM!
const app = express()

if (mode === 'kit') {
  const client = createClient({ baseUrl: upstream })
  app.get('/profile', requireTier(client, 'messenger-registered'), (req, res) => {
    res.json({ openId: req.campusgate!.openId })
  })
} else if (mode === 'fetch') {
  app.get('/profile', async (req, res) => {
    const authorization = req.headers.authorization
    if (authorization === undefined || authorization.trim() === '') {
      res.status(403).type(MEDIA_TYPE).send('{"error":"@forbidden/missing-authorization-header"}')
      return
    }
    const answer = await fetch(`${upstream}/session`, {
      headers: { accept: MEDIA_TYPE, authorization },
    })
    if (answer.status !== 200) {
      res
        .status(answer.status)
        .type(MEDIA_TYPE)
        .send(await answer.text())
      return
    }
    const session = (await answer.json()) as { openId: string }
    res.json({ openId: session.openId })
  })
} else {
  throw new Error('usage: express-guard.ts kit|fetch')
}

app.listen(Number(process.env.PORT), '127.0.0.1')
