import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';

/**
 * A NATS-speaking TCP listener on 127.0.0.1 that plays a hostile server: it
 * greets with INFO (auth required), records every CONNECT line a client
 * sends (with its `auth_token`, if any), then refuses it and hangs up. It
 * shows exactly what forgesync would hand a NATS server it was pointed at.
 */
export class NatsListener {
  /** The CONNECT options of every client, in order. */
  readonly connects: Record<string, unknown>[] = [];
  /** TCP connections accepted. */
  connections = 0;
  readonly #server: Server;
  readonly #sockets = new Set<Socket>();

  private constructor() {
    this.#server = createServer((socket) => this.#serve(socket));
  }

  static async start(): Promise<NatsListener> {
    const listener = new NatsListener();
    await new Promise<void>((resolve) => listener.#server.listen(0, '127.0.0.1', resolve));
    return listener;
  }

  get port(): number {
    return (this.#server.address() as AddressInfo).port;
  }

  async stop(): Promise<void> {
    for (const socket of this.#sockets) socket.destroy();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #serve(socket: Socket): void {
    this.connections++;
    this.#sockets.add(socket);
    socket.on('close', () => this.#sockets.delete(socket));
    socket.on('error', () => undefined);
    socket.write(`INFO ${JSON.stringify({ server_id: 'hostile', server_name: 'hostile', version: '2.10.0', proto: 1, host: '127.0.0.1', port: this.port, headers: true, max_payload: 1048576, auth_required: true })}\r\n`);
    let buffered = '';
    socket.on('data', (chunk) => {
      buffered += chunk.toString('utf8');
      let end: number;
      while ((end = buffered.indexOf('\r\n')) !== -1) {
        const line = buffered.slice(0, end);
        buffered = buffered.slice(end + 2);
        if (!line.startsWith('CONNECT ')) continue;
        this.connects.push(JSON.parse(line.slice('CONNECT '.length)) as Record<string, unknown>);
        socket.end("-ERR 'Authorization Violation'\r\n");
      }
    });
  }
}
