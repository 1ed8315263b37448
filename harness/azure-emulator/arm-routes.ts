// The resources the ARM emulator serves (server.ts lists the paths), over
// the emulated network (network.ts): NICs, scale-set NICs and VMs, operation
// polls, subnets and usages, with ARM's paging (nextLink) and its answer to
// a long-running write (Azure-AsyncOperation, Retry-After). A request gets
// here authenticated, within quota and authorized.
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { ArmObject } from './arm-object.ts';
import { ArmHttpError } from './errors.ts';
import type { EmulatedNetwork } from './network.ts';
import type { OperationName } from './operation-names.ts';
import { OP_PATH } from './operations.ts';

export const NIC_PATH =
  /\/resourceGroups\/([^/]+)\/providers\/Microsoft\.Network\/networkInterfaces(?:\/([^/]+))?\/?$/i;
const SUBNET_PATH =
  /\/resourceGroups\/([^/]+)\/providers\/Microsoft\.Network\/virtualNetworks\/([^/]+)\/subnets\/([^/]+)\/?$/i;
const USAGES_PATH =
  /\/resourceGroups\/([^/]+)\/providers\/Microsoft\.Network\/virtualNetworks\/([^/]+)\/usages\/?$/i;
export const SS_PATH =
  /\/resourceGroups\/([^/]+)\/providers\/Microsoft\.Compute\/virtualMachineScaleSets\/([^/]+)(?:\/virtualMachines\/([^/]+))?(?:\/networkInterfaces(?:\/([^/]+))?)?\/?$/i;
const API_VERSION = '2026-01-01';

/** An answer: its status, JSON body and headers. */
export interface Answer {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

export interface ArmRoutesOptions {
  /** NICs per page of a list. */
  pageSize: number;
  /** Retry-After (s) on a write's answer and on InProgress polls. */
  pollRetryAfterSeconds: number;
}

export class ArmRoutes {
  private readonly network: EmulatedNetwork;
  private readonly pageSize: number;
  private readonly pollRetryAfterSeconds: number;
  /** The emulator's endpoint, set when it listens (nextLink and poll URLs start with it). */
  base = '';

  constructor(network: EmulatedNetwork, options: ArmRoutesOptions) {
    this.network = network;
    this.pageSize = options.pageSize;
    this.pollRetryAfterSeconds = options.pollRetryAfterSeconds;
  }

  /** The real handling of an authenticated, authorized request. */
  serve(
    method: string,
    url: URL,
    operation: OperationName,
    req: IncomingMessage,
    body: string,
  ): Answer {
    const net = this.network;
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
      if (operation === 'ScaleSets.Get') {
        const set = net.getScaleSet(rg!, ss!);
        if (!set) throw new ArmHttpError(404, 'NotFound', `scale set ${ss} not found`);
        return { status: 200, body: set };
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
