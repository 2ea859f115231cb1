import assert from 'node:assert/strict'
import { existsSync, readFileSync } from 'node:fs'
import { describe, it } from 'node:test'
import { loadConfig } from '../../src/config.js'

// What the deployment files say, checked without Docker (test/container builds and runs them).

const read = (path: string): string => readFileSync(path, 'utf8')

describe('the deployment files', () => {
  it('container.config.json names the Dockerfile and the port the image listens on', () => {
    const config = JSON.parse(read('container.config.json')) as {
      containerPort: number
      dockerfilePath: string
      minNum: number
    }
    assert.ok(existsSync(config.dockerfilePath))
    const exposed = /^EXPOSE (\d+)$/m.exec(read(config.dockerfilePath))?.[1]
    assert.equal(config.containerPort, Number(exposed))
    assert.ok(config.minNum >= 1, 'the background jobs run inside the instances')
  })

  it("container.config.json reads the client address from the Cloud Hosting gateway's own header", () => {
    const config = JSON.parse(read('container.config.json')) as {
      envParams: Record<string, string>
    }
    const server = loadConfig({ TRUST_PROXY: config.envParams.TRUST_PROXY }).server
    assert.equal(server.trustProxy, 1)
    assert.equal(server.clientAddressHeader, 'x-original-forwarded-for')
  })

  it('the image carries the OCI labels and writes the commit campusgate_build_info reports', () => {
    const dockerfile = read('Dockerfile')
    for (const label of ['source', 'version', 'revision', 'created']) {
      assert.match(dockerfile, new RegExp(`org\\.opencontainers\\.image\\.${label}="\\$`))
    }
    assert.match(dockerfile, /> dist\/build-info\.json/)
  })

  it('compose rotates every service’s log, and on the host network the instances listen on loopback', () => {
    const compose = read('compose.yaml')
    assert.match(
      compose,
      /logging: &rotated\n\s+driver: json-file\n\s+options: \{ max-size: 10m, max-file: '5' \}/,
    )
    assert.equal(compose.match(/logging: \*rotated/g)?.length, 2, 'postgres and redis')
    const host = read('compose.host-network.yaml')
    assert.match(host, /environment: &on-the-host\n(\s+#.*\n)*\s+HOST: 127\.0\.0\.1\n/)
    assert.match(
      host,
      /campusgate-2:\n\s+network_mode: host\n\s+environment:\n\s+<<: \*on-the-host/,
    )
  })

  it('the Kubernetes example drains: a preStop wait, SHUTDOWN_DELAY, a disruption budget, one migration Job', () => {
    const doc = read('docs/deployment.md')
    const kubernetes = /^## Kubernetes$([\s\S]*?)^## /m.exec(doc)?.[1] ?? ''
    for (const line of [
      'preStop:',
      '{ name: SHUTDOWN_DELAY, value: 5s }',
      'kind: PodDisruptionBudget',
      'kind: Job',
      'args: [migrate]',
    ]) {
      assert.ok(kubernetes.includes(line), `the Kubernetes example has "${line}"`)
    }
  })
})
