export interface FileRun {
  stdout: string
  stderr: string
  status: number | null
  /** Killed at the file's time limit. */
  hung: boolean
  /** Killed because it had not exited well after its summary. */
  lingered: boolean
}

export function runFile(
  file: string,
  env: Record<string, string | undefined>,
  options: { timeoutMs: number; afterSummaryMs: number },
): Promise<FileRun>
export function count(text: string, label: string): number
export function judge(
  file: string,
  result: FileRun,
  options: { afterSummaryMs: number },
): { passed: number; failed: number; notes: string[] }
