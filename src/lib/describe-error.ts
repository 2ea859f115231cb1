/** One line naming an error for logs and stored diagnostics: `Name: message`, bounded. */
export function describeError(error: unknown, maxLength = 500): string {
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error)
  return text.slice(0, maxLength)
}
