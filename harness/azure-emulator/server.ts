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
// Every request needs `Authorization: Bearer <one of the accepted tokens>`.
// Injected faults (faults.ts) answer before the real handling. Each request
// is logged (time, operation, NIC, status) for tests and reports.
import type { ArmObject } from './nic-put.ts';
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ArmOperation } from '../../src/azure/arm/operations.ts';
import { armOperationOf } from '../../src/azure/arm/operations.ts';
import type { Needed, RoleAssignment } from './authorization.ts';
import { authorize, foreignLinks, linkedNeeds } from './authorization.ts';
import { CALL_ACTIONS } from '../../src/azure/arm/actions.ts';
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
  operation: ArmOperation;
  nic?: string;
  status: number;
  /** An error answer's code and message. */
  error?: string;
}

const NIC_PATH =
  /\/resourceGroups\/([^/]+)\/providers\/Microsoft\.Network\/networkInterfaces(?:\/([^/]+))?\/?$/i;
const SUBNET_PATH =
  /\/resourceGroups\/([^/]+)\/providers\/Microsoft\.Network\/virtualNetworks\/([^/]+)\/subnets\/([^/]+)\/?$/i;
const USAGES_PATH =
  /\/resourceGroups\/([^/]+)\/providers\/Microsoft\.Network\/virtualNetworks\/([^/]+)\/usages\/?$/i;
const OP_PATH = /\/operations\/([^/]+)\/?$/i;
const SS_PATH =
  /\/resourceGroups\/([^/]+)\/providers\/Microsoft\.Compute\/virtualMachineScaleSets\/([^/]+)(?:\/virtualMachines\/([^/]+))?(?:\/networkInterfaces(?:\/([^/]+))?)?\/?$/i;
const API_VERSION = '2026-01-01';

export class ArmEmulator {
  readonly network: EmulatedNetwork;
  readonly faults = new FaultQueue();
  /** cloud-provider-azure and scale-set reimages (other-writers.ts). */
  readonly otherWriters: OtherWriters;
  readonly requests: ArmRequestRecord[] = [];
  pageSize: number;
  pollRetryAfterSeconds: number;
  private tokens: Set<string>;
  roleAssignments: RoleAssignment[] | undefined;
  readonly quota: ArmQuota | undefined;
  /** Compute's per-VM update budget (undefined: none). */
  readonly perVm: PerVmQuota | undefined;
  private readonly keepLog: boolean;
  private readonly now: () => number;
  private server?: Server;
  private base = '';

  constructor(options: ArmEmulatorOptions) {
    this.network = new EmulatedNetwork(options);
    this.otherWriters = new OtherWriters(this.network, options.otherWriters ?? {});
    this.tokens = new Set(options.tokens ?? ['emulator-token']);
    this.pageSize = options.pageSize ?? 100;
    // Realistic timings: ARM's usual Retry-After of 10 s.
    this.pollRetryAfterSeconds =
      options.pollRetryAfterSeconds ??
      (options.timing === 'realistic' ? 10 : Math.ceil((options.operationMs ?? 0) / 1000));
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
    if ('retryAfter' in charged) {
      throw new ArmHttpError(
        429,
        'OperationNotAllowed',
        `The server rejected the request because too many requests have been received for this VM. Retry after ${charged.retryAfter} seconds.`,
        { ...charged.header, 'retry-after': String(charged.retryAfter) },
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
    return this.base;
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
    this.base = `http://${host}:${addr.port}`;
    this.otherWriters.start();
    return this.base;
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
  count(operation: ArmOperation, nic?: string): number {
    return this.requests.filter(
      (r) =>
        r.operation === operation &&
        (nic === undefined || r.nic?.toLowerCase() === nic.toLowerCase()),
    ).length;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const method = req.method ?? 'GET';
    const url = new URL(req.url ?? '/', this.base);
    const operation = armOperationOf(method, url.pathname);
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

  private async answer(
    method: string,
    url: URL,
    operation: ArmOperation,
    nic: string | undefined,
    req: IncomingMessage,
    body: string,
  ): Promise<{ status: number; body: unknown; headers?: Record<string, string> }> {
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
    if (charged && 'retryAfter' in charged) {
      throw new ArmHttpError(
        429,
        'TooManyRequests',
        `The request is being throttled. Retry after ${charged.retryAfter} seconds.`,
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

  /**
   * The action a request needs (CALL_ACTIONS, the backend's own list), on
   * what, and for a write the linked ones on every resource its body references.
   */
  private needs(operation: ArmOperation, url: URL, body: string): [Needed | undefined, Needed[]] {
    const path = url.pathname.replace(/\/$/, '');
    const rg = /^(\/subscriptions\/[^/]+\/resourceGroups\/[^/]+)/i.exec(path)?.[1] ?? path;
    const action = CALL_ACTIONS[operation];
    if (!action) return [undefined, []];
    switch (operation) {
      case 'NetworkInterfaces.List':
        return [{ action, scope: rg }, []];
      case 'NetworkInterfaces.CreateOrUpdate':
      case 'ScaleSetVMs.Update':
        return [{ action, scope: path }, linkedNeeds(parsedOrUndefined(body))];
      // A poll is a read of the operation, authorized at the resource group of
      // the resource its write changed: ARM's status URL is not under the
      // resource, so a role at the resource alone starts the operation but
      // cannot follow it (Azure docs, "Track asynchronous Azure operations",
      // permission for tracking async status; MicrosoftDocs/azure-docs#111535).
      // An unknown operation is the 404 below.
      case 'AsyncOperation.Get':
      case 'ComputeOperation.Get': {
        const scope = this.network.operationScope(OP_PATH.exec(path)?.[1] ?? '');
        return [scope ? { action, scope } : undefined, []];
      }
      case 'VirtualNetworks.ListUsage':
        return [{ action, scope: path.replace(/\/usages$/i, '') }, []];
      default:
        return [{ action, scope: path }, []];
    }
  }

  /** The real handling of an authenticated request. */
  private async operate(
    method: string,
    url: URL,
    operation: ArmOperation,
    req: IncomingMessage,
    body: string,
  ): Promise<{ status: number; body: unknown; headers?: Record<string, string> }> {
    const net = this.network;
    const [need, linked] = this.needs(operation, url, body);
    authorize(this.roleAssignments, need, linked, foreignLinks(linked));
    if (operation === 'NetworkInterfaces.List') {
      const [, rg] = NIC_PATH.exec(url.pathname)!;
      return { status: 200, body: this.page(net.listNics(rg!), url) };
    }
    if (operation === 'NetworkInterfaces.Get') {
      const [, rg, name] = NIC_PATH.exec(url.pathname)!;
      const found = net.getNic(rg!, name!);
      if (!found) throw new ArmHttpError(404, 'NotFound', `network interface ${name} not found`);
      return { status: 200, body: found, headers: { etag: String(found.etag) } };
    }
    if (operation === 'NetworkInterfaces.CreateOrUpdate') {
      const [, rg, name] = NIC_PATH.exec(url.pathname)!;
      const { nic, operationId } = net.putNic(rg!, name!, jsonBody(body), ifMatchOf(req));
      return this.writeAccepted('Microsoft.Network', operationId, nic);
    }
    if (operation.startsWith('ScaleSet')) {
      const [, rg, ss, id, nicName] = SS_PATH.exec(url.pathname) ?? [];
      if (operation === 'ScaleSetNetworkInterfaces.List') {
        return { status: 200, body: this.page(net.listScaleSetNics(rg!, ss!), url) };
      }
      if (operation === 'ScaleSetNetworkInterfaces.Get') {
        const found = net.getScaleSetNic(rg!, ss!, id!, nicName!);
        if (!found)
          throw new ArmHttpError(404, 'NotFound', `network interface ${nicName} not found`);
        return { status: 200, body: found, headers: { etag: String(found.etag) } };
      }
      if (operation === 'ScaleSetNetworkInterfaces.CreateOrUpdate') {
        throw new ArmHttpError(
          405,
          'OperationNotAllowed',
          "The operation 'write' on resource type 'virtualMachineScaleSets/virtualMachines/networkInterfaces' is disallowed.",
        );
      }
      if (operation === 'ScaleSetVMs.Get') {
        const vm = net.getScaleSetVm(rg!, ss!, id!);
        if (!vm) throw new ArmHttpError(404, 'NotFound', `scale set VM ${ss}/${id} not found`);
        return { status: 200, body: vm, headers: { etag: String(vm.etag) } };
      }
      const { vm, operationId } = net.putScaleSetVm(rg!, ss!, id!, jsonBody(body), ifMatchOf(req));
      return this.writeAccepted('Microsoft.Compute', operationId, vm);
    }
    if (operation === 'AsyncOperation.Get' || operation === 'ComputeOperation.Get') {
      const id = OP_PATH.exec(url.pathname)![1]!;
      const status = net.operation(id);
      if (!status) throw new ArmHttpError(404, 'NotFound', `operation ${id} not found`);
      const headers: Record<string, string> =
        status.status === 'InProgress' ? { 'retry-after': String(this.pollRetryAfterSeconds) } : {};
      return { status: 200, body: status, headers };
    }
    if (operation === 'Subnets.Get') {
      const [, rg, vnet, name] = SUBNET_PATH.exec(url.pathname)!;
      const subnet = net
        .subnetsOf(rg!, vnet!)
        .find((s) => s.name.toLowerCase() === name!.toLowerCase());
      if (!subnet) throw new ArmHttpError(404, 'NotFound', `subnet ${name} not found`);
      return { status: 200, body: subnet.toArm(`W/"${randomUUID()}"`) };
    }
    if (operation === 'VirtualNetworks.ListUsage') {
      const [, rg, vnet] = USAGES_PATH.exec(url.pathname)!;
      const subnets = net.subnetsOf(rg!, vnet!);
      if (subnets.length === 0)
        throw new ArmHttpError(404, 'NotFound', `virtual network ${vnet} not found`);
      const usages = subnets.map((s) => ({
        id: s.id,
        currentValue: s.inUse,
        limit: s.limit,
        name: { value: 'SubnetSpace', localizedValue: 'Subnet size and usage' },
        unit: 'Count',
      }));
      return { status: 200, body: this.page(usages, url) };
    }
    throw new ArmHttpError(
      404,
      'NotFound',
      `the emulator does not serve ${method} ${url.pathname}`,
    );
  }

  /**
   * A long-running write's first answer: the resource as stored, its etag, and
   * where to poll (Azure-AsyncOperation) after how long (Retry-After).
   */
  private writeAccepted(
    provider: 'Microsoft.Network' | 'Microsoft.Compute',
    operationId: string,
    resource: ArmObject,
  ): { status: number; body: unknown; headers: Record<string, string> } {
    const net = this.network;
    const poll = `${this.base}/subscriptions/${net.subscriptionId}/providers/${provider}/locations/${net.location}/operations/${operationId}?api-version=${API_VERSION}`;
    return {
      status: 200,
      body: resource,
      headers: {
        'azure-asyncoperation': poll,
        'retry-after': String(this.pollRetryAfterSeconds),
        etag: String(resource.etag),
      },
    };
  }

  /** One page of `items` from the `$skiptoken` offset, with a nextLink when more follow. */
  private page(items: unknown[], url: URL): { value: unknown[]; nextLink?: string } {
    const start = Number(url.searchParams.get('$skiptoken') ?? '0') || 0;
    const value = items.slice(start, start + this.pageSize);
    if (start + this.pageSize >= items.length) return { value };
    const next = new URL(url.pathname, this.base);
    next.searchParams.set('api-version', url.searchParams.get('api-version') ?? API_VERSION);
    next.searchParams.set('$skiptoken', String(start + this.pageSize));
    return { value, nextLink: next.toString() };
  }
}

/** A write's JSON body; anything else is ARM's 400 InvalidRequestFormat. */
function jsonBody(body: string): unknown {
  try {
    return JSON.parse(body) as unknown;
  } catch {
    throw new ArmHttpError(400, 'InvalidRequestFormat', 'the request body is not JSON');
  }
}

/** The If-Match header's etag, when one was sent. */
function ifMatchOf(req: IncomingMessage): string | undefined {
  const ifMatch = req.headers['if-match'];
  return typeof ifMatch === 'string' ? ifMatch : undefined;
}

/** A body's JSON, or undefined (the handler answers a bad body with its own 400). */
function parsedOrUndefined(body: string): unknown {
  try {
    return JSON.parse(body) as unknown;
  } catch {
    return undefined;
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
