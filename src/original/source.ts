import type { Connection, RowDataPacket } from 'mysql2/promise'
import { parseDatetime, timezoneOffsetMs, type OriginalRow } from './rows.js'

/** The original server's table, read a page at a time in primary-key order. */
export interface OriginalSource {
  /** Where it reads from, without the password: `host:port/database`. */
  readonly name: string
  count(): Promise<number>
  /** Every row, `pageSize` at a time, in `WechatOpenId` order. */
  pages(pageSize: number): AsyncIterable<OriginalRow[]>
  close(): Promise<void>
}

export interface SourceOptions {
  /** `mysql://user[:password]@host[:port]/database`. */
  url: string
  /** The zone the original wrote `LastUsed` in: `local` (this machine's), `Z` or `±HH:MM`. */
  timezone: string
  /** Used when the URL carries no password (MySQL's own `MYSQL_PWD` convention). */
  password?: string
}

/** Thrown for a `--from` or `--timezone` that cannot name a source: a wrong command line. */
export class SourceOptionError extends Error {}

const TABLE = 'UserSessions'

/**
 * Connects to the original server's MySQL or MariaDB. The driver is loaded here, on first use,
 * so nothing else in campusgate pays for it.
 */
export async function openOriginalSource(options: SourceOptions): Promise<OriginalSource> {
  let url: URL
  try {
    url = new URL(options.url)
  } catch {
    throw new SourceOptionError('--from must be a URL: mysql://user:password@host:port/database')
  }
  if (url.protocol !== 'mysql:' && url.protocol !== 'mariadb:') {
    throw new SourceOptionError('--from must be a mysql:// URL')
  }
  const database = decodeURIComponent(url.pathname.slice(1))
  if (database === '') throw new SourceOptionError('--from must name the database: mysql://…/name')
  if (options.timezone !== 'local' && timezoneOffsetMs(options.timezone) === null) {
    throw new SourceOptionError('--timezone must be local, Z or an offset like +08:00')
  }
  const mysql = await import('mysql2/promise')
  const password = url.password === '' ? options.password : decodeURIComponent(url.password)
  const connection: Connection = await mysql.createConnection({
    host: url.hostname.replace(/^\[|\]$/g, ''),
    port: url.port === '' ? 3306 : Number(url.port),
    user: decodeURIComponent(url.username),
    ...(password === undefined || password === '' ? {} : { password }),
    database,
    charset: 'utf8mb4',
    // LastUsed is parsed here, in the zone the original wrote it in, not the driver's.
    dateStrings: true,
    connectTimeout: 10_000,
  })
  const name = `${url.hostname}:${url.port === '' ? '3306' : url.port}/${database}`

  function toRow(row: RowDataPacket): OriginalRow {
    return {
      wechatOpenId: String(row.WechatOpenId ?? ''),
      uclcssaSessionKey: String(row.UclcssaSessionKey ?? ''),
      lastUsed: parseDatetime(
        row.LastUsed === null ? null : String(row.LastUsed),
        options.timezone,
      ),
      wechatSessionKey: String(row.WechatSessionKey ?? ''),
      uclapiToken: String(row.UclapiToken ?? ''),
    }
  }

  return {
    name,
    async count() {
      const [rows] = await connection.query<RowDataPacket[]>(`SELECT COUNT(*) AS n FROM ${TABLE}`)
      return Number(rows[0]?.n ?? 0)
    },
    async *pages(pageSize) {
      // Keyset pages on the primary key: each is one indexed range read, whatever the table's size.
      let after: string | null = null
      for (;;) {
        const [rows]: [RowDataPacket[], unknown] =
          after === null
            ? await connection.query<RowDataPacket[]>(
                `SELECT WechatOpenId, UclcssaSessionKey, LastUsed, WechatSessionKey, UclapiToken
                   FROM ${TABLE} ORDER BY WechatOpenId LIMIT ?`,
                [pageSize],
              )
            : await connection.query<RowDataPacket[]>(
                `SELECT WechatOpenId, UclcssaSessionKey, LastUsed, WechatSessionKey, UclapiToken
                   FROM ${TABLE} WHERE WechatOpenId > ? ORDER BY WechatOpenId LIMIT ?`,
                [after, pageSize],
              )
        if (rows.length === 0) return
        yield rows.map(toRow)
        if (rows.length < pageSize) return
        after = String(rows[rows.length - 1].WechatOpenId)
      }
    },
    async close() {
      await connection.end()
    },
  }
}
