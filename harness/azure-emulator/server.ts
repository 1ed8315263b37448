// A loopback ARM emulator: the Microsoft.Network subset the Azure backend
// uses, over real HTTP, so the real @azure/arm-network client talks to it.
//   GET  .../networkInterfaces                 paged (nextLink)
//   GET  .../networkInterfaces/{nic}           with its ETag
//   PUT  .../networkInterfaces/{nic}           If-Match (412), Azure-AsyncOperation
//   GET  /subscriptions/S/providers/Microsoft.Network/locations/L/operations/{id}
//   GET  .../virtualNetworks/{vnet}/subnets/{subnet}
//   GET  .../virtualNetworks/{vnet}/usages     paged
// and, for Uniform scale sets (Microsoft.Compute paths):
//   GET  .../virtualMachineScaleSets/{ss}/networkInterfaces                    paged
//   GET  .../virtualMachineScaleSets/{ss}/virtualMachines/{id}/networkInterfaces/{nic}
//   PUT  (same)                                   refused: not writable directly
//   GET  .../virtualMachineScaleSets/{ss}/virtualMachines/{id}                 with its ETag
//   PUT  (same)                                   If-Match (412), Azure-AsyncOperation
//   GET  /subscriptions/S/providers/Microsoft.Compute/locations/L/operations/{id}
// Every request needs `Authorization: Bearer <one of the accepted tokens>`,
// is held to ARM's quotas and authorized (authorization.ts), then served
// (arm-routes.ts).
// Injected faults (faults.ts) answer before the real handling. Each request
// is logged (time, operation, NIC, status) for tests and reports.
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { OperationName } from './operation-names.ts';
import { operationOf } from './operation-names.ts';
import { ArmRoutes, NIC_PATH, SS_PATH, type Answer } from './arm-routes.ts';
import type { RoleAssignment } from './authorization.ts';
import { authorize, EMULATOR_CLIENT, foreignLinks, requestNeeds } from './authorization.ts';
import { ArmHttpError } from './errors.ts';
import type { FaultSpec } from './faults.ts';
import type { OtherWritersOptions } from './other-writers.ts';
import { OtherWriters } from './other-writers.ts';
import { defaultCode, FaultQueue } from './faults.ts';
import type { NetworkOptions } from './network.ts';
import { EmulatedNetwork } from './network.ts';
import type { BucketSpec, QuotaSpec } from './quota.ts';
import { ARM_QUOTA, ArmQuota, COMPUTE_PER_VM, PerVmQuota } from './quota.ts';

export interface ArmEmulatorOptions extends NetworkOptions {
  /** Bearer tokens accepted (default ['emulator-token']). */
  tokens?: string[];
  /** NICs per page of a list (default 100). */
  pageSize?: number;
  /** Retry-After (s) on a PUT's answer and on InProgress polls (default: operationMs rounded up to s). */
  pollRetryAfterSeconds?: number;
  /** The caller's role assignments; absent: every request is allowed. */
  roleAssignments?: RoleAssignment[];
  /** ARM's read and write buckets (default ARM_QUOTA); false: no throttling. */
  quota?: QuotaSpec | false;
  /** Keep the request log (default true). */
  log?: boolean;
  /** Compute's per-VM update budget (quota.ts; default 12, 4 a minute); false: none. */
  perVmQuota?: BucketSpec | false;
  /** Other writers of the NICs (other-writers.ts), run from listen() to close(); default none. */
  otherWriters?: OtherWritersOptions;
}

export interface ArmRequestRecord {
  at: number;
  method: string;
  operation: OperationName;
  nic?: string;
  status: number;
  /** An error answer's code and message. */
  error?: string;
}

export class ArmEmulator {
  readonly network: EmulatedNetwork;
  readonly faults = new FaultQueue();
  /** cloud-provider-azure and scale-set reimages (other-writers.ts). */
  readonly otherWriters: OtherWriters;
  readonly requests: ArmRequestRecord[] = [];
  /** The resources it serves (arm-routes.ts). */
  private readonly routes: ArmRoutes;
  private tokens: Set<string>;
  roleAssignments: RoleAssignment[] | undefined;
  readonly quota: ArmQuota | undefined;
  /** Compute's per-VM update budget (undefined: none). */
  readonly perVm: PerVmQuota | undefined;
  private readonly keepLog: boolean;
  private readonly now: () => number;
  private server?: Server;

  constructor(options: ArmEmulatorOptions) {
    this.network = new EmulatedNetwork(options);
    this.otherWriters = new OtherWriters(this.network, options.otherWriters ?? {});
    this.tokens = new Set(options.tokens ?? ['emulator-token']);
    this.routes = new ArmRoutes(this.network, {
      pageSize: options.pageSize ?? 100,
      // Realistic timings: ARM's usual Retry-After of 10 s.
      pollRetryAfterSeconds:
        options.pollRetryAfterSeconds ??
        (options.timing === 'realistic' ? 10 : Math.ceil((options.operationMs ?? 0) / 1000)),
    });
    this.keepLog = options.log ?? true;
    this.now = options.now ?? Date.now;
    this.roleAssignments = options.roleAssignments;
    this.perVm =
      options.perVmQuota === false
        ? undefined
        : new PerVmQuota(options.perVmQuota ?? COMPUTE_PER_VM);
    this.quota =
      options.quota === false ? undefined : new ArmQuota(options.quota ?? ARM_QUOTA, this.now());
  }

  /** A scale-set VM update against Compute's per-VM budget (quota.ts): its header, or a 429. */
  private chargeVm(method: string, operation: string, path: string): Record<string, string> {
    if (!this.perVm || method === 'GET' || !operation.startsWith('ScaleSetVMs')) return {};
    const charged = this.perVm.charge(path, this.now());
    // Compute's throttling answer (Azure docs, "Troubleshooting API
    // throttling errors", its sample: 429 OperationNotAllowed, a detail
    // TooManyRequests whose target is the policy spent, the policy's count 0
    // in x-ms-ratelimit-remaining-resource, Retry-After).
    if ('retryAfter' in charged) {
      throw new ArmHttpError(
        429,
        'OperationNotAllowed',
        'The server rejected the request because too many requests have been received for this subscription.',
        { ...charged.header, 'retry-after': String(charged.retryAfter) },
        [
          {
            code: 'TooManyRequests',
            target: charged.policy,
            message: JSON.stringify({
              operationGroup: charged.policy,
              allowedRequestCount: charged.allowed,
            }),
          },
        ],
      );
    }
    return charged.header;
  }

  /** Replaces the accepted bearer tokens (a rotation). */
  acceptTokens(tokens: string[]): void {
    this.tokens = new Set(tokens);
  }

  inject(fault: FaultSpec): void {
    this.faults.add(fault);
  }

  /** The endpoint to give the client, e.g. http://127.0.0.1:41234. */
  get endpoint(): string {
    return this.routes.base;
  }

  async listen(port = 0, host = '127.0.0.1'): Promise<string> {
    const server = createServer((req, res) => void this.handle(req, res));
    server.keepAliveTimeout = 5_000;
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => resolve());
    });
    const addr = server.address() as AddressInfo;
    this.routes.base = `http://${host}:${addr.port}`;
    this.otherWriters.start();
    return this.routes.base;
  }

  async close(): Promise<void> {
    this.otherWriters.stop();
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  }

  /** Requests of one operation (and NIC), for tests. */
  count(operation: OperationName, nic?: string): number {
    return this.requests.filter(
      (r) =>
        r.operation === operation &&
        (nic === undefined || r.nic?.toLowerCase() === nic.toLowerCase()),
    ).length;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const method = req.method ?? 'GET';
    const url = new URL(req.url ?? '/', this.routes.base);
    const operation = operationOf(method, url.pathname);
    const ss = SS_PATH.exec(url.pathname);
    // A NIC by name; a scale-set instance as vmss:SS/ID (its NIC is written through it).
    const nic =
      NIC_PATH.exec(url.pathname)?.[2] ?? (ss?.[3] ? `vmss:${ss[2]}/${ss[3]}` : undefined);
    const record: ArmRequestRecord = {
      at: this.now(),
      method,
      operation,
      status: 0,
      ...(nic ? { nic } : {}),
    };
    if (this.keepLog) this.requests.push(record);
    let status = 500;
    try {
      const body = await readBody(req);
      const answer = await this.answer(method, url, operation, nic, req, body);
      status = answer.status;
      send(res, answer.status, answer.body, answer.headers);
    } catch (err) {
      const e =
        err instanceof ArmHttpError
          ? err
          : new ArmHttpError(500, 'InternalServerError', (err as Error).message);
      status = e.status;
      record.error = `${e.code}: ${e.message}`;
      send(res, e.status, e.body(), e.headers);
    }
    record.status = status;
  }

  /** The real handling of a request within quota: authorized, then served (arm-routes.ts). */
  private async operate(
    method: string,
    url: URL,
    operation: OperationName,
    req: IncomingMessage,
    body: string,
  ): Promise<Answer> {
    const scopeOf = (id: string): string | undefined => this.network.operationScope(id);
    const [need, linked] = requestNeeds(operation, method, url, body, scopeOf);
    authorize(this.roleAssignments, need, linked, foreignLinks(linked));
    return this.routes.serve(method, url, operation, req, body);
  }

  private async answer(
    method: string,
    url: URL,
    operation: OperationName,
    nic: string | undefined,
    req: IncomingMessage,
    body: string,
  ): Promise<Answer> {
    const auth = req.headers.authorization ?? '';
    const token = auth.startsWith('Bearer ') ? auth.slice('Bearer '.length) : undefined;
    if (token === undefined || !this.tokens.has(token)) {
      throw new ArmHttpError(
        401,
        'InvalidAuthenticationToken',
        'The access token is missing or invalid.',
        {
          'www-authenticate': 'Bearer error="invalid_token"',
        },
      );
    }
    const charged = this.quota?.charge(method, this.now());
    // ARM's own throttling of the subscription: 429
    // SubscriptionRequestsThrottled (MicrosoftDocs/SupportArticles-docs,
    // "Troubleshoot the SubscriptionRequestsThrottled error code (429)"; the
    // token-bucket wording as Azure/ARO-HCP's test fixtures quote ARM), the
    // kind's remaining count 0, Retry-After.
    if (charged && 'retryAfter' in charged) {
      const kind = method.toUpperCase() === 'GET' ? 'read' : 'write';
      throw new ArmHttpError(
        429,
        'SubscriptionRequestsThrottled',
        `Number of '${kind}' requests for subscription '${this.network.subscriptionId}' actor '${EMULATOR_CLIENT}' exceeded. Please try again after '${charged.retryAfter}' seconds after additional tokens are available. Refer to https://aka.ms/arm-throttling for additional information.`,
        { ...charged.header, 'retry-after': String(charged.retryAfter) },
      );
    }
    const perVm = this.chargeVm(method, operation, url.pathname);
    const quotaHeader = { ...charged?.header, ...perVm };
    const fault = this.faults.take(operation, nic);
    if (fault?.delayMs) await new Promise((r) => setTimeout(r, fault.delayMs));
    if (fault?.status !== undefined) {
      // The change is made, and its answer is an error all the same.
      if (fault.landed)
        await this.operate(method, url, operation, req, body).catch(() => undefined);
      const headers: Record<string, string> = {};
      if (fault.retryAfterSeconds !== undefined)
        headers['retry-after'] = String(fault.retryAfterSeconds);
      throw new ArmHttpError(
        fault.status,
        fault.code ?? defaultCode(fault.status),
        'injected fault',
        { ...quotaHeader, ...headers },
      );
    }
    try {
      const answer = await this.operate(method, url, operation, req, body);
      return { ...answer, headers: { ...quotaHeader, ...answer.headers } };
    } catch (err) {
      if (err instanceof ArmHttpError) Object.assign(err.headers, quotaHeader);
      throw err;
    }
  }
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function send(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    'x-ms-request-id': randomUUID(),
    ...headers,
  });
  res.end(text);
}
