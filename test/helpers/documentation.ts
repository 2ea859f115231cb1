import { MEDIA_TYPE } from './service.js'

type ErrorTable = Readonly<Record<string, { status: number; code: string }>>

/** A code answered by a real request: the operation it came from (`null` for no route) and its status. */
export interface ProducedError {
  method: string
  /** The route's path as the OpenAPI document names it, or `null` for an unknown endpoint. */
  path: string | null
  status: number
  code: string
}

interface OpenApiDocument {
  paths?: Record<string, Record<string, { responses?: Record<string, unknown> }>>
  components?: { responses?: Record<string, unknown> }
}

/** The error codes one documented response allows (its `error` enum). */
function codesOf(response: unknown): string[] {
  const schema = (response as { content?: Record<string, { schema?: unknown }> } | undefined)
    ?.content?.[MEDIA_TYPE]?.schema as { properties?: { error?: { enum?: unknown } } } | undefined
  const codes = schema?.properties?.error?.enum
  return Array.isArray(codes)
    ? codes.filter((code): code is string => typeof code === 'string')
    : []
}

/** `status code` pairs of the README's error table (rows like "| 400 | `@bad-request/…` | …"). */
export function readmeErrorRows(readme: string): Set<string> {
  const section = readme.split(/^## Errors$/m)[1]?.split(/^## /m)[0] ?? ''
  const rows = [...section.matchAll(/^\|\s*(\d{3})\s*\|\s*`(@[^`]+)`/gm)]
  return new Set(rows.map((row) => `${row[1]} ${row[2]}`))
}

/**
 * Everything that disagrees between the error table, the OpenAPI document and the README: a code
 * a route answered but does not document, a code no operation (or shared response) documents with
 * its status, a README row that is not in the table or a table row missing from the README.
 */
export function documentationProblems(
  errors: ErrorTable,
  document: OpenApiDocument,
  readme: string,
  produced: readonly ProducedError[],
): string[] {
  const problems: string[] = []
  const documented = new Set<string>()
  for (const operations of Object.values(document.paths ?? {})) {
    for (const operation of Object.values(operations)) {
      for (const [status, response] of Object.entries(operation.responses ?? {})) {
        for (const code of codesOf(response)) documented.add(`${status} ${code}`)
      }
    }
  }
  // A shared response (the unknown endpoint's 404 belongs to no operation) has no status of its
  // own: its codes count with the status the table gives them.
  const statusOf = new Map(Object.values(errors).map(({ status, code }) => [code, status]))
  for (const response of Object.values(document.components?.responses ?? {})) {
    for (const code of codesOf(response)) documented.add(`${statusOf.get(code)} ${code}`)
  }

  for (const { method, path, status, code } of produced) {
    if (path === null) continue
    const operation = document.paths?.[path]?.[method.toLowerCase()]
    if (operation === undefined) {
      problems.push(`${method} ${path} answered ${status} ${code} but is not in the document`)
    } else if (!codesOf(operation.responses?.[String(status)]).includes(code)) {
      problems.push(`${method} ${path} answered ${status} ${code}, which it does not document`)
    }
  }

  const table = new Set(Object.values(errors).map(({ status, code }) => `${status} ${code}`))
  for (const row of table) {
    if (!documented.has(row)) problems.push(`${row} is documented by no operation`)
  }
  const readmeRows = readmeErrorRows(readme)
  for (const row of table)
    if (!readmeRows.has(row)) problems.push(`${row} is missing from the README`)
  for (const row of readmeRows)
    if (!table.has(row)) problems.push(`the README lists ${row}, not in src/errors.ts`)
  return problems
}

/** One answer as a client saw it, for {@link undocumentedAnswer}. */
export interface SeenAnswer {
  method: string
  /** The path the router matched (percent-decoded, no query), whether or not a route has it. */
  path: string
  status: number
  /** The `error` of a JSON error body; `undefined` when the body is not one. */
  code: string | undefined
  /** Whether a body came with the answer. */
  hasBody: boolean
}

/**
 * The answers any request can meet whatever its route (the protocol edge, Accept, rate limits):
 * the `status code` pairs every operation that negotiates Accept (documents a 406) lists. The
 * callback answers any Accept, and so lists only the protocol edge's rows.
 */
function sharedAnswers(document: OpenApiDocument): Set<string> {
  let shared: Set<string> | undefined
  for (const operations of Object.values(document.paths ?? {})) {
    for (const operation of Object.values(operations)) {
      const pairs = new Set(
        Object.entries(operation.responses ?? {}).flatMap(([status, response]) =>
          codesOf(response).map((code) => `${status} ${code}`),
        ),
      )
      if (operation.responses?.['406'] === undefined) continue
      const before: Set<string> | undefined = shared
      shared = before === undefined ? pairs : new Set([...before].filter((pair) => pairs.has(pair)))
    }
  }
  return shared ?? new Set()
}

/**
 * Why an answer is not one the OpenAPI document lists for the request's operation (HEAD as its
 * GET), or `null` when it is. A request no operation takes may get the shared unknown-endpoint
 * answer or one any request can meet; `hidden` paths (the document itself, its viewer) may also
 * answer successfully.
 */
export function undocumentedAnswer(
  document: OpenApiDocument,
  answer: SeenAnswer,
  hidden: readonly string[] = [],
): string | null {
  const { method, path, status, code } = answer
  const seen = `${method} ${path} answered ${status} ${code ?? '(no error body)'}`
  if (method === 'HEAD' && answer.hasBody) return `${seen} with a body`
  const operation = document.paths?.[path]?.[method === 'HEAD' ? 'get' : method.toLowerCase()]
  if (operation !== undefined) {
    const listed = operation.responses?.[String(status)] as { $ref?: unknown } | undefined
    // A shared response is listed by reference to components.responses.
    const response =
      typeof listed?.$ref === 'string'
        ? document.components?.responses?.[listed.$ref.replace('#/components/responses/', '')]
        : listed
    if (response === undefined) return `${seen}: not a status it documents`
    if (status < 400 || method === 'HEAD') return null
    return code !== undefined && codesOf(response).includes(code)
      ? null
      : `${seen}: not an error it documents`
  }
  const isHidden = hidden.some((prefix) => path === prefix || path.startsWith(`${prefix}/`))
  if (isHidden && status < 400) return null
  const unknown = codesOf(document.components?.responses?.unknownEndpoint)
  if (status === 404 && (method === 'HEAD' || (code !== undefined && unknown.includes(code))))
    return null
  if (
    method === 'HEAD'
      ? [...sharedAnswers(document)].some((pair) => pair.startsWith(`${status} `))
      : sharedAnswers(document).has(`${status} ${code}`)
  )
    return null
  return `${seen}: not the unknown-endpoint answer nor one any request can meet`
}
