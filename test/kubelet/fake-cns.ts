// A small fake of the sidecar's IPAM endpoints for the kubelet tests: a list
// of free IPs, assignments by podInterfaceID, ReturnCode 32 when empty.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeCns {
  url: string;
  free: string[];
  assigned: Map<string, string>;
  bodies: Record<string, unknown>[];
  releases: string[];
  maxInFlight: number;
  /** Delay before each answer, ms. */
  delayMs: number;
  /** Answer every request with this HTTP status and ReturnCode instead. */
  failWith?: { status: number; code: number };
  close(): Promise<void>;
}

export async function startFakeCns(ips: string[]): Promise<FakeCns> {
  let inFlight = 0;
  const fake = {
    url: '',
    free: [...ips],
    assigned: new Map<string, string>(),
    bodies: [] as Record<string, unknown>[],
    releases: [] as string[],
    maxInFlight: 0,
    delayMs: 0,
  } as FakeCns;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      inFlight += 1;
      fake.maxInFlight = Math.max(fake.maxInFlight, inFlight);
      setTimeout(() => {
        inFlight -= 1;
        const send = (status: number, payload: unknown) => {
          res.writeHead(status, { 'content-type': 'application/json' });
          res.end(JSON.stringify(payload));
        };
        // A body that is not JSON (a client that gave up mid-request, under
        // load) is answered 400, as the sidecar answers it, not thrown.
        let body: Record<string, unknown>;
        try {
          body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
        } catch {
          send(400, { podIPInfo: [], response: { ReturnCode: 23, Message: 'malformed body' } });
          return;
        }
        fake.bodies.push(body);
        const id = String(body.podInterfaceID);
        if (fake.failWith) {
          send(fake.failWith.status, {
            podIPInfo: [],
            response: { ReturnCode: fake.failWith.code, Message: 'injected' },
          });
          return;
        }
        if (req.url === '/network/releaseipconfigs') {
          fake.releases.push(id);
          const ip = fake.assigned.get(id);
          if (ip) {
            fake.assigned.delete(id);
            fake.free.push(ip);
          }
          send(200, { podIPInfo: [], response: { ReturnCode: 0, Message: '' } });
          return;
        }
        let ip = fake.assigned.get(id);
        if (!ip) {
          ip = fake.free.shift();
          if (!ip) {
            send(200, { podIPInfo: [], response: { ReturnCode: 32, Message: 'no IP available' } });
            return;
          }
          fake.assigned.set(id, ip);
        }
        send(200, {
          podIPInfo: [
            {
              PodIPConfig: { IPAddress: ip, PrefixLength: 16 },
              NetworkContainerPrimaryIPConfig: {
                IPSubnet: { IPAddress: '10.240.0.4', PrefixLength: 16 },
                DNSServers: [],
                GatewayIPAddress: '10.240.0.1',
              },
            },
          ],
          response: { ReturnCode: 0, Message: '' },
        });
      }, fake.delayMs);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  fake.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return fake;
}
