/** The value when it is a string; a repeated query parameter (an array) or anything else is not. */
export function stringOrUndefined(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined
}

/** A named string field of an untyped object (a parsed form or query), or `''`. */
export function stringField(source: unknown, name: string): string {
  if (typeof source !== 'object' || source === null) return ''
  return stringOrUndefined((source as Record<string, unknown>)[name]) ?? ''
}
