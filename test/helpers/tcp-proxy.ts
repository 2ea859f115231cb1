import { once } from 'node:events'
import { connect, createServer, type AddressInfo, type Socket } from 'node:net'

/** A TCP proxy on loopback that a test can cut (every connection dropped, new ones refused) and restore. */
export interface TcpProxy {
  port: number
  cut(): Promise<void>
  restore(): Promise<void>
  close(): Promise<void>
}

export async function startTcpProxy(
  targetPort: number,
  targetHost = '127.0.0.1',
): Promise<TcpProxy> {
  const sockets = new Set<Socket>()
  const server = createServer((client) => {
    const upstream = connect(targetPort, targetHost)
    for (const socket of [client, upstream]) {
      sockets.add(socket)
      socket.on('close', () => sockets.delete(socket))
      socket.on('error', () => socket.destroy())
    }
    client.pipe(upstream).pipe(client)
    client.on('close', () => upstream.destroy())
    upstream.on('close', () => client.destroy())
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo
  const stop = async (): Promise<void> => {
    const closed = server.listening ? new Promise((done) => server.close(done)) : Promise.resolve()
    for (const socket of sockets) socket.destroy()
    await closed
  }
  return {
    port,
    cut: stop,
    async restore() {
      server.listen(port, '127.0.0.1')
      await once(server, 'listening')
    },
    close: stop,
  }
}
