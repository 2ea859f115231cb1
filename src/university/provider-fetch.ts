/**
 * A server-to-server GET to the university's provider (a CAS ticket validation, SAML metadata):
 * bounded in time and in size, so a slow or huge answer costs at most `timeoutMs` and `maxBytes`.
 * Throws a `ProviderFetchError` whose message names the kind of failure and never the URL (which
 * may carry a ticket).
 */
export class ProviderFetchError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'ProviderFetchError'
  }
}

export interface FetchedText {
  status: number
  text: string
}

export interface ProviderFetchOptions {
  timeoutMs: number
  maxBytes: number
  fetch?: typeof fetch
  accept?: string
}

/** The connection error's code (ECONNREFUSED, ENOTFOUND…) or the abort's name, for the reason. */
function failureKind(error: unknown): string {
  if (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')) {
    return 'timed out'
  }
  let current: unknown = error
  for (let depth = 0; depth < 4 && current instanceof Error; depth++) {
    const code = (current as NodeJS.ErrnoException).code
    if (typeof code === 'string') return code
    current = current.cause
  }
  return error instanceof Error ? error.name : 'error'
}

export async function fetchText(url: string, options: ProviderFetchOptions): Promise<FetchedText> {
  const doFetch = options.fetch ?? fetch
  const signal = AbortSignal.timeout(options.timeoutMs)
  let response: Response
  try {
    response = await doFetch(url, {
      signal,
      redirect: 'error',
      headers: { accept: options.accept ?? '*/*' },
    })
  } catch (error) {
    throw new ProviderFetchError(`request failed: ${failureKind(error)}`, { cause: error })
  }
  const declared = Number(response.headers.get('content-length') ?? '0')
  if (declared > options.maxBytes) {
    await response.body?.cancel().catch(() => undefined)
    throw new ProviderFetchError(`answer larger than ${options.maxBytes} bytes`)
  }
  const chunks: Uint8Array[] = []
  let size = 0
  try {
    if (response.body !== null) {
      const reader = (response.body as ReadableStream<Uint8Array>).getReader()
      for (;;) {
        const { done, value } = await reader.read()
        if (done) break
        size += value.byteLength
        if (size > options.maxBytes) {
          await reader.cancel().catch(() => undefined)
          throw new ProviderFetchError(`answer larger than ${options.maxBytes} bytes`)
        }
        chunks.push(value)
      }
    }
  } catch (error) {
    if (error instanceof ProviderFetchError) throw error
    throw new ProviderFetchError(`reading the answer failed: ${failureKind(error)}`, {
      cause: error,
    })
  }
  return { status: response.status, text: Buffer.concat(chunks).toString('utf8') }
}
