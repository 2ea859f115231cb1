import { execFile, spawnSync } from 'node:child_process'

/** What a docker command printed. */
export interface Output {
  stdout: string
  stderr: string
}

/**
 * Runs a command to its end; rejects with its output when it exits non-zero or outlasts
 * `timeoutMs`. The classic builder (DOCKER_BUILDKIT=0) is the one every docker has.
 */
export function run(
  command: string,
  args: readonly string[],
  options: { timeoutMs?: number; cwd?: string; env?: Record<string, string> } = {},
): Promise<Output> {
  return new Promise((resolve, reject) => {
    execFile(
      command,
      args,
      {
        cwd: options.cwd,
        timeout: options.timeoutMs ?? 120_000,
        killSignal: 'SIGKILL',
        maxBuffer: 64 * 1024 * 1024,
        env: {
          ...process.env,
          ...options.env,
          DOCKER_BUILDKIT: '0',
          COMPOSE_DOCKER_CLI_BUILD: '0',
        },
      },
      (error, stdout, stderr) => {
        if (error === null) resolve({ stdout, stderr })
        else {
          const why = `${command} ${args.join(' ')}: ${error.message}\n${stdout}\n${stderr}`
          reject(new Error(why.slice(-20_000)))
        }
      },
    )
  })
}

export const docker = (
  args: readonly string[],
  options: { timeoutMs?: number; cwd?: string } = {},
) => run('docker', args, options)

/** Why no Docker daemon can be used here, or null when one answers. */
export function dockerUnavailable(): string | null {
  const info = spawnSync('docker', ['info', '--format', '{{.ServerVersion}}'], {
    encoding: 'utf8',
    timeout: 30_000,
  })
  if (info.error !== undefined) return `no docker command (${info.error.message})`
  if (info.status !== 0) return `no Docker daemon answers (${info.stderr.trim().split('\n')[0]})`
  return null
}

/** `docker compose` (v2) where the plugin is installed, else `docker-compose` (v1), else null. */
export function composeCommand(): string[] | null {
  for (const command of [['docker', 'compose'], ['docker-compose']]) {
    const probe = spawnSync(command[0], [...command.slice(1), 'version'], {
      encoding: 'utf8',
      timeout: 30_000,
    })
    if (probe.status === 0) return command
  }
  return null
}

/** The id of the image tagged `tag`, or null. */
export async function imageId(tag: string): Promise<string | null> {
  return docker(['image', 'inspect', '--format', '{{.Id}}', tag]).then(
    ({ stdout }) => stdout.trim(),
    () => null,
  )
}

/** The sum of the layer sizes `docker history` shows for an image, in bytes. */
export async function historyBytes(image: string): Promise<number> {
  const { stdout } = await docker(['history', '--human=false', '--format', '{{.Size}}', image])
  return stdout
    .trim()
    .split('\n')
    .reduce((sum, size) => sum + Number(size), 0)
}

/** What the tests read of `docker inspect` of an image or a container. */
export interface Inspected {
  Config: {
    User: string
    WorkingDir: string
    Env: string[]
    Entrypoint: string[] | null
    Volumes: Record<string, unknown> | null
    Healthcheck?: { Test: string[] }
  }
  /** Containers only. */
  State?: { ExitCode: number; Health?: { Status: string } }
  HostConfig?: { ReadonlyRootfs: boolean }
}

/** `docker inspect` of one image or container. */
export async function inspect(name: string): Promise<Inspected> {
  const { stdout } = await docker(['inspect', name])
  return (JSON.parse(stdout) as Inspected[])[0]
}

/** Polls until `ready` resolves true; fails after `timeoutMs` with what `why` says then. */
export async function waitFor(
  ready: () => Promise<boolean>,
  timeoutMs: number,
  why: () => Promise<string>,
): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (await ready().catch(() => false)) return
    await new Promise((done) => setTimeout(done, 250))
  }
  throw new Error(`not within ${timeoutMs / 1000} s: ${await why().catch(String)}`)
}

/** Whether `url` answers 200. */
export async function answersOk(url: string): Promise<boolean> {
  const response = await fetch(url).catch(() => null)
  await response?.arrayBuffer()
  return response?.status === 200
}
