import { escapeHtml } from '../lib/html.js'
import type { DailySeries } from './reads.js'

const WIDTH = 300
const HEIGHT = 90
const AXIS = 14

/** `2026-01-31` of an epoch day number. */
export function dayLabel(day: number): string {
  return new Date(day * 86_400_000).toISOString().slice(0, 10)
}

/**
 * A bar chart of one value per day, drawn here as SVG: no script, no library in the browser,
 * and no inline style (colours come from console.css by class). Each bar has a <title> and
 * the chart a text summary, so screen readers get the numbers.
 */
export function barChart(label: string, totalLabel: string, data: DailySeries): string {
  const max = Math.max(1, ...data.values)
  const slot = WIDTH / data.values.length
  const bars = data.values
    .map((value, index) => {
      const height = Math.round((value / max) * (HEIGHT - AXIS - 4) * 10) / 10
      const x = Math.round(index * slot * 10) / 10
      const y = HEIGHT - AXIS - height
      const day = dayLabel(data.days[index] ?? 0)
      return `<rect class="bar" x="${x}" y="${y}" width="${Math.max(1, Math.round((slot - 2) * 10) / 10)}" height="${height}"><title>${day}: ${value}</title></rect>`
    })
    .join('')
  const first = dayLabel(data.days[0] ?? 0)
  const last = dayLabel(data.days[data.days.length - 1] ?? 0)
  const total = data.values.reduce((sum, value) => sum + value, 0)
  return `<figure class="chart"><svg viewBox="0 0 ${WIDTH} ${HEIGHT}" role="img" aria-label="${escapeHtml(`${label}, ${totalLabel}: ${total} (${first} – ${last})`)}">
<line class="axis" x1="0" y1="${HEIGHT - AXIS}" x2="${WIDTH}" y2="${HEIGHT - AXIS}"/>${bars}
<text class="tick" x="0" y="${HEIGHT - 2}">${first.slice(5)}</text><text class="tick" x="${WIDTH}" y="${HEIGHT - 2}" text-anchor="end">${last.slice(5)}</text><text class="tick" x="0" y="10">${max}</text>
</svg><figcaption>${escapeHtml(totalLabel)}: <strong>${total}</strong></figcaption></figure>`
}

/** A share as a ring (SVG stroke dash), with the percentage written beside it. */
export function shareRing(label: string, part: number, whole: number): string {
  const share = whole === 0 ? 0 : part / whole
  const percent = Math.round(share * 100)
  const circumference = 2 * Math.PI * 15.9155
  const dash = Math.round(share * circumference * 100) / 100
  return `<figure class="ring"><svg viewBox="0 0 36 36" role="img" aria-label="${escapeHtml(`${label}: ${percent}% (${part}/${whole})`)}">
<circle class="track" cx="18" cy="18" r="15.9155" fill="none" stroke-width="4"/>
<circle class="fill" cx="18" cy="18" r="15.9155" fill="none" stroke-width="4" stroke-dasharray="${dash} ${circumference}" transform="rotate(-90 18 18)"/>
<text class="ring-text" x="18" y="21" text-anchor="middle">${percent}%</text>
</svg><figcaption>${escapeHtml(label)}: ${part}/${whole}</figcaption></figure>`
}
