// Pure validation of what callers hand the store. Everything is checked before
// a transaction starts, so bad input gets a clear InvalidIpStoreInputError and
// changes nothing.
import { addressFamily, containerFamily, familyMismatch, type IpFamily } from '../nnc/family.ts';
import type { NetworkContainer } from '../nnc/types.ts';
import { isIpAddress } from './address.ts';
import type { AssignRequest, IpState, SyncOptions } from './types.ts';
import { IP_STATES, InvalidIpStoreInputError } from './types.ts';

/** One IP of the NNC status, as the store keeps it. */
export interface BackedIp {
  id: string;
  ip: string;
  ncId: string;
  family: IpFamily;
}

/** A dynamic network container of the NNC status, validated. */
export interface BackedContainer {
  id: string;
  subnetAddressSpace: string;
  defaultGateway: string;
  primaryIP: string;
  /** Undefined when nothing in the container says (no subnet, no address). */
  family: IpFamily | undefined;
  ips: BackedIp[];
}

function fail(message: string, field?: string): never {
  throw new InvalidIpStoreInputError(message, field);
}

function nonEmptyString(value: unknown, what: string, field?: string): string {
  if (typeof value !== 'string' || value === '') fail(`${what} must be a non-empty string`, field);
  return value;
}

function optionalString(value: unknown, what: string, field?: string): string {
  if (value === undefined || value === null) return '';
  if (typeof value !== 'string') fail(`${what} must be a string`, field);
  return value;
}

/**
 * Validates the network containers of an NNC status. Static containers are
 * skipped (the pool is the dynamic ones); duplicate container ids, IP ids or
 * addresses are refused, since the store could not tell which one is meant,
 * and so is a container whose subnet, primary IP, gateway and addresses are
 * not all of one family (a pod would get a gateway of the other family).
 */
export function validateContainers(containers: unknown): BackedContainer[] {
  if (!Array.isArray(containers)) fail('network containers must be an array', 'networkContainers');
  const result: BackedContainer[] = [];
  const ncIds = new Set<string>();
  const ipIds = new Set<string>();
  const addresses = new Set<string>();
  containers.forEach((raw: unknown, index) => {
    const at = `networkContainers[${index}]`;
    if (typeof raw !== 'object' || raw === null) fail(`${at} must be an object`, at);
    const nc = raw as NetworkContainer;
    if (nc.assignmentMode === 'static') return;
    const id = nonEmptyString(nc.id, `${at}.id`, `${at}.id`);
    if (ncIds.has(id)) fail(`network container ${id} is listed twice`, `${at}.id`);
    ncIds.add(id);
    const mixed = familyMismatch(nc);
    if (mixed !== undefined)
      fail(`network container ${id}: ${mixed.reason}`, `${at}.${mixed.field}`);
    const assignments: unknown = nc.ipAssignments ?? [];
    if (!Array.isArray(assignments))
      fail(`network container ${id}: ipAssignments must be an array`, `${at}.ipAssignments`);
    const ips = assignments.map((entry: unknown, i): BackedIp => {
      const where = `network container ${id}: ipAssignments[${i}]`;
      const field = `${at}.ipAssignments[${i}]`;
      if (typeof entry !== 'object' || entry === null) fail(`${where} must be an object`, field);
      const { name, ip } = entry as { name?: unknown; ip?: unknown };
      const ipId = nonEmptyString(name, `${where}.name`, `${field}.name`);
      if (!isIpAddress(ip))
        fail(`${where}.ip ${JSON.stringify(ip)} is not an IP address`, `${field}.ip`);
      if (ipIds.has(ipId)) fail(`IP id ${ipId} is listed twice`, `${field}.name`);
      if (addresses.has(ip)) fail(`IP address ${ip} is listed twice`, `${field}.ip`);
      ipIds.add(ipId);
      addresses.add(ip);
      return { id: ipId, ip, ncId: id, family: addressFamily(ip) as IpFamily };
    });
    result.push({
      id,
      subnetAddressSpace: optionalString(
        nc.subnetAddressSpace,
        `${id}.subnetAddressSpace`,
        `${at}.subnetAddressSpace`,
      ),
      defaultGateway: optionalString(
        nc.defaultGateway,
        `${id}.defaultGateway`,
        `${at}.defaultGateway`,
      ),
      primaryIP: optionalString(nc.primaryIP, `${id}.primaryIP`, `${at}.primaryIP`),
      family: containerFamily(nc),
      ips,
    });
  });
  return result;
}

export function validateSyncOptions(
  options: SyncOptions | undefined,
): 'Available' | 'PendingProgramming' {
  const state = options?.newIpState ?? 'Available';
  if (state !== 'Available' && state !== 'PendingProgramming') {
    fail(`newIpState must be Available or PendingProgramming, not ${JSON.stringify(state)}`);
  }
  return state;
}

export function validateIds(ids: unknown, what: string): string[] {
  if (!Array.isArray(ids)) fail(`${what} must be an array of ids`);
  return ids.map((id: unknown, i) => nonEmptyString(id, `${what}[${i}]`));
}

export function validateCount(count: unknown): number {
  if (typeof count !== 'number' || !Number.isSafeInteger(count) || count < 0) {
    fail(`count must be a non-negative integer, not ${String(count)}`);
  }
  return count;
}

export function validatePodInterfaceId(value: unknown): string {
  return nonEmptyString(value, 'podInterfaceID');
}

export function validateAssignRequest(request: unknown): AssignRequest {
  if (typeof request !== 'object' || request === null) fail('assign request must be an object');
  const r = request as Record<string, unknown>;
  const desired: unknown = r.desiredIPAddresses ?? [];
  if (!Array.isArray(desired)) fail('desiredIPAddresses must be an array');
  desired.forEach((address: unknown) => {
    if (!isIpAddress(address))
      fail(`desired IP address ${JSON.stringify(address)} is not an IP address`);
  });
  return {
    podInterfaceID: validatePodInterfaceId(r.podInterfaceID),
    infraContainerID: optionalString(r.infraContainerID, 'infraContainerID'),
    podName: optionalString(r.podName, 'podName'),
    podNamespace: optionalString(r.podNamespace, 'podNamespace'),
    desiredIPAddresses: desired as string[],
  };
}

export function validateStates(states: unknown): IpState[] | undefined {
  if (states === undefined) return undefined;
  if (!Array.isArray(states)) fail('states must be an array');
  for (const state of states) {
    if (!IP_STATES.includes(state as IpState)) fail(`unknown IP state ${JSON.stringify(state)}`);
  }
  return states as IpState[];
}
