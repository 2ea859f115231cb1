// Fixed values, not settings: no variable sets them. The Config fields that carry them stay so a
// test can shorten one (e.g. a webhook try's timeout); production always runs with these.

/** How long a call to the messenger platform or the university's provider may take. */
export const PROVIDER_TIMEOUT_MS = 5000
/** Where confirmation emails are written as .eml files when SMTP_URL is unset. */
export const OUTBOX_DIR = './data/outbox'
/** The window MAIL_LIMIT_PER_USER and MAIL_LIMIT_PER_RECIPIENT count over: "per hour". */
export const MAIL_LIMIT_WINDOW_MS = 3_600_000
/** docs/webhooks.md, "Delivery": a try not answered 2xx within 10 s is abandoned. */
export const WEBHOOK_TRY_TIMEOUT_MS = 10_000
/** How often the webhook worker looks for due tries unwoken (a change wakes it at once). */
export const WEBHOOK_POLL_INTERVAL_MS = 1000
