import { pipeline, Readable } from 'node:stream'
import { stringify, type Options } from 'csv-stringify'
import type { FastifyReply } from 'fastify'
import { CONSOLE_HEADERS } from './guard.js'

/**
 * RFC 4180 (docs/console.md, "Downloads"): a field is quoted where it holds a comma, a quote or a
 * line break, quotes are doubled, lines end in CRLF. And no cell is a formula to a spreadsheet:
 * one that starts with `=`, `+`, `-`, `@`, a tab or a carriage return gets a leading apostrophe
 * (csv-stringify's `escape_formulas`), so a name or an address someone chose cannot run as one.
 */
const OPTIONS: Options = { escape_formulas: true, record_delimiter: 'windows' }

/** A page of a download: its lines, and where the next page starts (null: the last). */
export interface CsvBatch<K> {
  rows: string[][]
  next: K | null
}

/**
 * A CSV download read in batches as it is sent, so its memory does not grow with the list: the
 * header line, then each batch's lines until one says it was the last; a batch is read when the
 * client has taken the lines before it. UTF-8 with a byte order mark, which spreadsheets need to
 * read Chinese names right. A failed read ends the answer (the stream is destroyed with it).
 */
export function csvDownload<K>(
  header: readonly string[],
  batch: (after: K | null) => Promise<CsvBatch<K>>,
): Readable {
  async function* records(): AsyncGenerator<string[]> {
    yield [...header]
    let after: K | null = null
    do {
      const next: CsvBatch<K> = await batch(after)
      yield* next.rows
      after = next.next
    } while (after !== null)
  }
  const csv = stringify({ ...OPTIONS, bom: true })
  return pipeline(Readable.from(records()), csv, () => undefined)
}

/** An instant as the downloads write it: ISO 8601 in UTC; '' for none. */
export function isoTime(ms: number | null): string {
  return ms === null ? '' : new Date(ms).toISOString()
}

/** The reply as a CSV attachment named `campusgate-WHAT-2026-01-31.csv`, with the pages' headers. */
export function csvAttachment(reply: FastifyReply, what: string, now: Date): FastifyReply {
  const name = `campusgate-${what}-${now.toISOString().slice(0, 10)}.csv`
  return reply
    .code(200)
    .headers(CONSOLE_HEADERS)
    .header('content-disposition', `attachment; filename="${name}"`)
    .type('text/csv; charset=utf-8; header=present')
}
