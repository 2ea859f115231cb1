/**
 * Replaces each secret, as written or URL-encoded, with `[redacted]`: for text that goes to the
 * logs but may echo what we sent (an error naming our request URL, a provider's error message).
 */
export function redact(text: string, secrets: readonly string[]): string {
  let clean = text
  for (const secret of secrets) {
    if (secret === '') continue
    for (const form of new Set([secret, encodeURIComponent(secret)]))
      clean = clean.split(form).join('[redacted]')
  }
  return clean
}
