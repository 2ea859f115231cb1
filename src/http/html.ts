import type { FastifyReply } from 'fastify'

/** Sends a page that is never cached, never framed, runs no script and loads nothing else. */
export function sendHtml(reply: FastifyReply, status: number, html: string): FastifyReply {
  return reply
    .code(status)
    .headers({
      'cache-control': 'no-store',
      'referrer-policy': 'no-referrer',
      'content-security-policy':
        "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
      'x-content-type-options': 'nosniff',
    })
    .type('text/html; charset=utf-8')
    .send(html)
}
