/** One line of the service's log (pino JSON): its level, message and whatever fields it carries. */
export type LogLine = Record<string, any> & { level: number; msg?: string }

/** Every line the service wrote so far, parsed; a line that is not JSON throws. */
export function logLines(service: { logs(): string }): LogLine[] {
  return service
    .logs()
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as LogLine)
}

/** The lines that carry `event`. */
export function logEvents(service: { logs(): string }, event: string): LogLine[] {
  return logLines(service).filter((line) => line.event === event)
}

/** pino's `error`; `fatal` is 60. */
export const ERROR_LEVEL = 50

/** Lines at error level or above. */
export function errorLines(service: { logs(): string }): LogLine[] {
  return logLines(service).filter((line) => line.level >= ERROR_LEVEL)
}
