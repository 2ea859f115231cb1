/** Every list an operator reads comes in pages of this many rows, with the total beside it. */
export const PAGE_SIZE = 50

/** One page of a list: its rows, the number of rows in the whole list, and which page it is. */
export interface Paged<T> {
  rows: T[]
  total: number
  /** 1 for the first page. */
  page: number
}

/** Far past any list campusgate keeps, far below where an offset loses precision. */
const MAX_PAGE = 1_000_000

/** The page a query string asks for (`?page=3`); anything else is the first. */
export function pageNumber(raw: unknown): number {
  if (typeof raw !== 'string' || !/^\d{1,7}$/.test(raw)) return 1
  return Math.min(MAX_PAGE, Math.max(1, Number(raw)))
}

/** Rows to skip before `page`. */
export function offsetOf(page: number): number {
  return (page - 1) * PAGE_SIZE
}

/** `text` with LIKE's wildcards and escape character escaped (with `ESCAPE '\'`). */
function likeLiteral(text: string): string {
  return text.replace(/[\\%_]/g, (char) => `\\${char}`)
}

/** `text` as a LIKE pattern that matches it literally, as a prefix (with `ESCAPE '\'`). */
export function likePrefix(text: string): string {
  return `${likeLiteral(text)}%`
}

/** `text` as a LIKE pattern that matches it literally anywhere in a value (with `ESCAPE '\'`). */
export function likeInfix(text: string): string {
  return `%${likeLiteral(text)}%`
}

/**
 * A list's page `page`, or its last page when `page` is past the end (a link kept after the
 * list shrank, a number typed): never an empty page of a list that has rows.
 */
export async function pageWithin<T>(
  page: number,
  read: (page: number) => Promise<Paged<T>>,
): Promise<Paged<T>> {
  const list = await read(page)
  if (list.rows.length > 0 || list.total === 0 || page === 1) return list
  return read(Math.max(1, Math.ceil(list.total / PAGE_SIZE)))
}
