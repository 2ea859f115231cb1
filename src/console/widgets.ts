import { escapeHtml } from '../lib/html.js'
import { PAGE_SIZE, type Paged } from '../lib/paging.js'
import { href, type PageContext } from './layout.js'
import { WORDS } from './words.js'

const e = escapeHtml

/**
 * A moment as `<time>`: the machine-readable instant for the console's script, which writes it
 * in the browser's language and time zone, and UTC for a page read without script.
 */
export function timeTag(ms: number | null): string {
  if (ms === null) return '–'
  const iso = new Date(ms).toISOString()
  return `<time datetime="${iso}">${iso.slice(0, 16).replace('T', ' ')} UTC</time>`
}

/** A UTC day ('YYYY-MM-DD') as `<time>`: a day has no time zone to translate. */
export function dayTag(day: string | null, none: string): string {
  return day === null ? e(none) : `<time datetime="${e(day)}">${e(day)}</time>`
}

/** A status line after an action. */
export function notice(text: string | null): string {
  return text === null ? '' : `<p class="notice" role="status">${e(text)}</p>`
}

/**
 * A list as a table that reads as cards on a phone: each cell carries its column's name
 * (`data-label`), which the style sheet shows beside it when the table is too narrow for columns.
 * Cells must already be escaped.
 */
export function cards(
  headers: readonly string[],
  rows: readonly string[][],
  empty: string,
): string {
  if (rows.length === 0) return `<p class="muted">${e(empty)}</p>`
  const head = headers.map((h) => `<th scope="col">${e(h)}</th>`).join('')
  const body = rows
    .map(
      (cells) =>
        `<tr>${cells.map((cell, index) => `<td data-label="${e(headers[index] ?? '')}">${cell}</td>`).join('')}</tr>`,
    )
    .join('')
  return `<table class="cards"><thead><tr>${head}</tr></thead><tbody>${body}</tbody></table>`
}

/**
 * Where a page of a list is in the whole (`51–57 of 57`), with "Previous" and "Next" to the
 * neighbouring pages; `param` names the page in the query (a page with several lists has one
 * each, and `params` carries the others' on). `below` is the copy under the list.
 */
export function pager<T>(
  context: PageContext,
  list: Paged<T>,
  options: {
    path: string
    params?: Record<string, string | null>
    param?: string
    label: string
    below?: boolean
  },
): string {
  const words = WORDS[context.locale].pager
  const param = options.param ?? 'page'
  const from = list.total === 0 ? 0 : (list.page - 1) * PAGE_SIZE + 1
  const to = Math.min(list.total, (list.page - 1) * PAGE_SIZE + list.rows.length)
  const at = (page: number) =>
    href(context, options.path, { ...options.params, [param]: page === 1 ? null : String(page) })
  const previous =
    list.page > 1 ? `<a href="${e(at(list.page - 1))}" rel="prev">${e(words.previous)}</a>` : ''
  const next =
    list.page * PAGE_SIZE < list.total
      ? `<a href="${e(at(list.page + 1))}" rel="next">${e(words.next)}</a>`
      : ''
  const label =
    options.below === true ? words.pagesBelow(options.label) : words.pages(options.label)
  return `<nav class="pager${options.below === true ? ' below' : ''}" aria-label="${e(label)}"><p>${e(words.showing(from, to, list.total))}</p>${previous}${next}</nav>`
}

/**
 * A list with its pager above and, when it has more than one page, again below it: "Previous"
 * and "Next" are in reach at the end of a long page too. `table` is the list, already drawn.
 */
export function pagedList<T>(
  context: PageContext,
  list: Paged<T>,
  options: Parameters<typeof pager<T>>[2],
  table: string,
): string {
  const below = list.total > PAGE_SIZE ? pager(context, list, { ...options, below: true }) : ''
  return `${pager(context, list, options)}${table}${below}`
}

/** An audit event's detail (a small JSON object) as fields: name and value, each escaped. */
export function detailFields(detail: string | null): string {
  if (detail === null || detail === '') return '–'
  let value: unknown
  try {
    value = JSON.parse(detail)
  } catch {
    return `<code>${e(detail)}</code>`
  }
  if (typeof value !== 'object' || value === null) return `<code>${e(detail)}</code>`
  const fields = Object.entries(value as Record<string, unknown>)
    .map(
      ([name, field]) =>
        `<div><dt>${e(name)}</dt><dd>${e(typeof field === 'string' ? field : JSON.stringify(field))}</dd></div>`,
    )
    .join('')
  return fields === '' ? '–' : `<dl class="fields">${fields}</dl>`
}

/** The hidden `lang` field of a GET form, so the language survives the form. */
export function langField(context: PageContext): string {
  return context.lang === null ? '' : `<input type="hidden" name="lang" value="${context.lang}">`
}

/** A `<select>` with its label; `options` are [value, text] pairs. */
export function selectField(
  id: string,
  name: string,
  label: string,
  options: readonly (readonly [string, string])[],
  selected: string,
): string {
  const items = options
    .map(
      ([value, text]) =>
        `<option value="${e(value)}"${value === selected ? ' selected' : ''}>${e(text)}</option>`,
    )
    .join('')
  return `<div><label for="${id}">${e(label)}</label><select id="${id}" name="${name}">${items}</select></div>`
}
