// A fulfiller replica's own way to the API server under chaos: a TCP proxy
// per replica (host.ts points the replica's kubeconfig at it), so the
// harness can cut one replica off while the other keeps its connections.
// A cut ends every connection the replica has open (its watches first of
// all: they are the long-lived ones) and refuses new ones for a while, as a
// network partition of that pod would: its watches fail and restart with
// backoff, its lists fail, and its view of the cluster goes stale, which is
// the standby's danger on taking the Lease (docs/design/fulfiller.md#high-availability).
// It forwards bytes only (TLS passes through untouched).
import { connect, createServer, type Server, type Socket } from 'node:net';

export class ReplicaProxy {
  private readonly server: Server;
  private readonly target: { host: string; port: number };
  /** Open connections: the replica's socket and the one to the API server. */
  private readonly open = new Set<[Socket, Socket]>();
  private refuseUntil = 0;
  private listenPort = 0;
  /** Connections ended by cuts, and connections refused while cut. */
  cutConnections = 0;
  refusedConnections = 0;

  private constructor(target: { host: string; port: number }) {
    this.target = target;
    this.server = createServer((client) => this.accept(client));
  }

  /** Listens on 127.0.0.1 (a free port) and forwards to `target`. */
  static async start(target: { host: string; port: number }): Promise<ReplicaProxy> {
    const proxy = new ReplicaProxy(target);
    await new Promise<void>((resolve, reject) => {
      proxy.server.once('error', reject);
      proxy.server.listen(0, '127.0.0.1', () => resolve());
    });
    const addr = proxy.server.address();
    proxy.listenPort = typeof addr === 'object' && addr ? addr.port : 0;
    return proxy;
  }

  get port(): number {
    return this.listenPort;
  }

  /** Connections the replica has open through the proxy now. */
  get openConnections(): number {
    return this.open.size;
  }

  /** Ends every open connection and refuses new ones for `downMs`; how many were ended. */
  cut(downMs: number, now = Date.now()): number {
    this.refuseUntil = Math.max(this.refuseUntil, now + downMs);
    const n = this.open.size;
    for (const pair of [...this.open]) for (const s of pair) s.destroy();
    this.cutConnections += n;
    return n;
  }

  private accept(client: Socket): void {
    if (Date.now() < this.refuseUntil) {
      this.refusedConnections += 1;
      client.destroy();
      return;
    }
    const upstream = connect(this.target.port, this.target.host);
    const pair: [Socket, Socket] = [client, upstream];
    this.open.add(pair);
    for (const s of pair) {
      // Either side ending or failing ends both: the other side sees a reset.
      s.on('error', () => {});
      s.once('close', () => {
        this.open.delete(pair);
        for (const o of pair) if (o !== s) o.destroy();
      });
    }
    client.pipe(upstream);
    upstream.pipe(client);
  }

  /** Stops listening and ends every connection. */
  async close(): Promise<void> {
    for (const pair of [...this.open]) for (const s of pair) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
