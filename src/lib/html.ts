import { DEFAULT_LOCALE, LANGUAGE_NAMES, otherLocales, type Locale } from './locale.js'

const HTML_ESCAPES: Readonly<Record<string, string>> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
}

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => HTML_ESCAPES[char] ?? char)
}

/**
 * Phone first: one readable column, system fonts with the CJK faces each platform ships, tap
 * targets of at least 44 px. Inline, as the pages' Content-Security-Policy allows.
 */
const STYLE = `:root{--fg:#1f2328;--muted:#59636e;--line:#d1d9e0;--accent:#0a58ca;--bg:#f3f5f8;--card:#fff}
*{box-sizing:border-box}
html{-webkit-text-size-adjust:100%}
body{margin:0;background:var(--bg);color:var(--fg);font:16px/1.6 system-ui,-apple-system,"Segoe UI",Roboto,"PingFang SC","Hiragino Sans GB","Microsoft YaHei","Noto Sans CJK SC","Source Han Sans SC","Noto Sans SC","WenQuanYi Micro Hei",sans-serif}
.bar{display:flex;align-items:center;justify-content:space-between;gap:1rem;max-width:44rem;margin:0 auto;padding:.25rem 1rem}
.brand{font-weight:600;letter-spacing:.02em}
.lang{display:flex;gap:.25rem}
.lang a,.lang span{display:inline-block;min-width:44px;min-height:44px;line-height:44px;padding:0 .6rem;text-align:center;border-radius:.5rem;color:var(--accent);text-decoration:none}
.lang span{color:var(--muted)}
.lang a:hover,.lang a:focus-visible{background:var(--card)}
main{max-width:44rem;margin:0 auto 2rem;padding:1.25rem 1rem;background:var(--card);border-top:1px solid var(--line);border-bottom:1px solid var(--line)}
h1,.h1{font-size:1.45rem;line-height:1.3;margin:.25rem 0 1rem}
h2{font-size:1.15rem;margin:1.75rem 0 .5rem}
h3{font-size:1rem;margin:0 0 .25rem}
p{margin:.5rem 0 1rem}
a{color:var(--accent)}
code,pre,kbd{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,"Liberation Mono",monospace;font-size:.875em}
pre{background:var(--bg);border:1px solid var(--line);border-radius:.5rem;padding:.75rem;overflow-x:auto;line-height:1.45}
button,.button,input,select{font:inherit}
button,.button{display:inline-block;min-height:44px;padding:.55rem 1.1rem;margin:.25rem .5rem .25rem 0;border-radius:.5rem;border:1px solid var(--line);background:var(--card);color:var(--fg);cursor:pointer;text-decoration:none}
button[value=allow],button.primary{background:var(--accent);border-color:var(--accent);color:#fff}
button:disabled{opacity:.45;cursor:not-allowed}
input[type=email],input[type=text],select{width:100%;min-height:44px;padding:.5rem .75rem;border:1px solid var(--line);border-radius:.5rem;background:var(--card)}
fieldset{border:1px solid var(--line);border-radius:.5rem;margin:0 0 1rem;padding:.5rem 1rem}
label{display:flex;align-items:center;gap:.6rem;min-height:44px}
input[type=radio]{width:1.25rem;height:1.25rem;flex:none}
.note{color:var(--muted);font-size:.925rem}
.account{padding:.75rem 1rem;background:var(--bg);border-radius:.5rem;overflow-wrap:anywhere}
.state{display:grid;grid-template-columns:repeat(auto-fit,minmax(9rem,1fr));gap:.5rem;margin:1rem 0;padding:.75rem 1rem;background:var(--bg);border-radius:.5rem}
.state dt{font-size:.8rem;color:var(--muted)}.state dd{margin:0;font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.875rem;overflow-wrap:anywhere}
.steps{list-style:none;counter-reset:step;padding:0;margin:0}
.step{counter-increment:step;position:relative;padding:1rem 0 1rem 2.5rem;border-top:1px solid var(--line)}
.step::before{content:counter(step);position:absolute;left:0;top:1rem;width:1.75rem;height:1.75rem;line-height:1.75rem;text-align:center;border-radius:50%;background:var(--accent);color:#fff;font-size:.875rem;font-weight:600}
.step .note{margin:.25rem 0 .5rem}
.field{min-height:auto;margin:.5rem 0 .25rem;font-size:.925rem;color:var(--muted)}
.io{white-space:pre-wrap;overflow-wrap:anywhere;margin:.75rem 0 0;font-size:.8rem}
.alt{display:none}
.alt:target{display:block}
body:has(.alt:target) .primary{display:none}
@media (min-width:48rem){body{font-size:17px}main{margin-top:1rem;padding:2rem 2.25rem;border:1px solid var(--line);border-radius:.75rem}h1,.h1{font-size:1.75rem}}`

/** The same page in another language, carried inline (see PageOptions.inlineAlternate). */
export interface AlternatePage {
  locale: Locale
  title: string
  body: string
}

export interface PageOptions {
  /** The page's language (`<html lang>`); English when absent. */
  locale?: Locale
  /** Where this page is in each locale; the switch links to the others. */
  languageLinks?: Partial<Record<Locale, string>>
  /**
   * The page in the other language, inline, shown when the switch is pressed (CSS `:target`,
   * no request): for a page that must not be requested again, such as the callback's.
   */
  inlineAlternate?: AlternatePage
  /** Same-origin scripts; only pages sent with a policy that allows them may name any. */
  scripts?: readonly string[]
}

function languageSwitch(current: Locale, hrefOf: (locale: Locale) => string | undefined): string {
  const items = [
    `<span aria-current="true">${LANGUAGE_NAMES[current]}</span>`,
    ...otherLocales(current).flatMap((locale) => {
      const href = hrefOf(locale)
      return href === undefined
        ? []
        : [
            `<a href="${escapeHtml(href)}" hreflang="${locale}" lang="${locale}">${LANGUAGE_NAMES[locale]}</a>`,
          ]
    }),
  ]
  return items.length < 2
    ? ''
    : `<nav class="lang" aria-label="Language / 语言">${items.join('')}</nav>`
}

function bar(current: Locale, hrefOf: (locale: Locale) => string | undefined): string {
  return `<header class="bar"><span class="brand">campusgate</span>${languageSwitch(current, hrefOf)}</header>`
}

/** A complete page with the title as heading; `body` must already be escaped. */
export function htmlPage(title: string, body: string, options: PageOptions = {}): string {
  const locale = options.locale ?? DEFAULT_LOCALE
  const alternate = options.inlineAlternate
  const altId = alternate === undefined ? '' : `in-${alternate.locale}`
  const hrefOf = (other: Locale): string | undefined =>
    alternate?.locale === other ? `#${altId}` : options.languageLinks?.[other]
  const scripts = (options.scripts ?? [])
    .map((src) => `<script src="${escapeHtml(src)}" defer></script>\n`)
    .join('')
  // The inline alternate's heading is not an h1: the page has one title, in its own language.
  const alternateHtml =
    alternate === undefined
      ? ''
      : `<div class="alt" id="${altId}" lang="${alternate.locale}">
${bar(alternate.locale, (other) => (other === locale ? '#' : undefined))}
<main>
<p class="h1" role="heading" aria-level="1">${escapeHtml(alternate.title)}</p>
${alternate.body}
</main>
</div>
`
  return `<!doctype html>
<html lang="${locale}">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>${STYLE}</style>
${scripts}</head>
<body>
<div class="primary">
${bar(locale, hrefOf)}
<main>
<h1>${escapeHtml(title)}</h1>
${body}
</main>
</div>
${alternateHtml}</body>
</html>
`
}
