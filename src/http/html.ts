import type { FastifyReply, FastifyRequest } from 'fastify'

/** Whether the client asks for a page (a browser) rather than the API's JSON. */
export function wantsHtml(request: FastifyRequest): boolean {
  return /\btext\/html\b/i.test(request.headers.accept ?? '')
}

const POLICY = "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'"
/** A page that runs its own same-origin script and talks to its own origin (the playground). */
const POLICY_WITH_SCRIPT =
  "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'unsafe-inline'; " +
  "frame-ancestors 'none'"

/**
 * Sends a page that is never cached, never framed and loads nothing else; it runs no script
 * unless `runsScript`, and then only scripts served by this origin.
 */
export function sendHtml(
  reply: FastifyReply,
  status: number,
  html: string,
  { runsScript = false }: { runsScript?: boolean } = {},
): FastifyReply {
  return reply
    .code(status)
    .headers({
      'cache-control': 'no-store',
      'referrer-policy': 'no-referrer',
      'content-security-policy': runsScript ? POLICY_WITH_SCRIPT : POLICY,
      'x-content-type-options': 'nosniff',
    })
    .type('text/html; charset=utf-8')
    .send(html)
}
