// The status the fulfiller writes for a node, computed from what it had and
// what the backend now holds. Pure: the container's id comes from the caller
// (kept for an existing container, fresh for a new one), so tests can check
// that kept IPs keep their ids and the version moves only on change.
import type { NetworkContainer, NncStatus, ScalerSpec } from '../nnc/types.ts';
import type { HeldContainer } from './backend.ts';
import { addressesOf } from './address-index.ts';

/** `status.status` values, as Azure's DNC reports them. */
export const STATUS_UPDATED = 'Updated';
export const STATUS_UPDATING = 'Updating';
export const STATUS_SUBNET_FULL = 'SubnetFull';

export interface ContainerInput {
  held: HeldContainer;
  /** The container as it is in the status now (absent: a new one). */
  existing?: NetworkContainer;
  /** Id for a new container. */
  newId: () => string;
  /** The Node's InternalIP, when the backend does not say. */
  nodeIP?: string;
}

function sameAssignments(a: NetworkContainer['ipAssignments'], b: HeldContainer['ipAssignments']) {
  const x = a ?? [];
  return x.length === b.length && x.every((v, i) => v.name === b[i]!.name && v.ip === b[i]!.ip);
}

/** The managed container as it will be written. */
export function containerFrom(input: ContainerInput): NetworkContainer {
  const { held, existing } = input;
  const changed =
    !existing ||
    existing.primaryIP !== held.primaryIP ||
    !sameAssignments(existing.ipAssignments, held.ipAssignments);
  const version = typeof existing?.version === 'number' ? existing.version : 0;
  return {
    ...existing,
    id: existing?.id || input.newId(),
    assignmentMode: 'dynamic',
    type: held.type,
    primaryIP: held.primaryIP,
    subnetName: held.subnetName,
    subnetAddressSpace: held.subnetAddressSpace,
    defaultGateway: held.defaultGateway,
    version: !existing ? 0 : changed ? version + 1 : version,
    nodeIP: held.nodeIP ?? input.nodeIP ?? existing?.nodeIP ?? '',
    ipAssignments: held.ipAssignments.map((a) => ({ name: a.name, ip: a.ip })),
  };
}

export interface StatusInput {
  previous: NncStatus | undefined;
  /** The dynamic containers as they will be written (one per address family). */
  containers: NetworkContainer[];
  requested: number;
  /** True when the subnet could not supply what was asked. */
  subnetShort: boolean;
  scaler: Required<ScalerSpec>;
}

/**
 * The whole new status: the dynamic containers replaced, the others carried
 * over untouched. Only the status gate (status-gate.ts) calls it: every
 * status written is built here, behind the gate.
 */
export function statusOf(input: StatusInput): NncStatus {
  const { containers } = input;
  // Each container stays where it was; a new one goes last.
  const byId = new Map(containers.map((nc) => [nc.id, nc]));
  const networkContainers: NetworkContainer[] = [];
  for (const nc of input.previous?.networkContainers ?? []) {
    const mine = byId.get(nc?.id);
    if (mine) {
      networkContainers.push(mine);
      byId.delete(nc.id);
    } else if ((nc?.assignmentMode ?? 'dynamic') !== 'dynamic') networkContainers.push(nc);
  }
  networkContainers.push(...byId.values());
  // A pod needs an address of each family: the pool is as large as its smallest container.
  const assigned =
    containers.length === 0
      ? 0
      : Math.min(...containers.map((nc) => nc.ipAssignments?.length ?? 0));
  const state =
    containers.length > 0 && assigned >= input.requested
      ? STATUS_UPDATED
      : input.subnetShort
        ? STATUS_SUBNET_FULL
        : STATUS_UPDATING;
  return {
    ...input.previous,
    scaler: { ...input.scaler },
    networkContainers,
    assignedIPCount: assigned,
    status: state,
  };
}

/**
 * The containers of a status with `kept` merged in (a restore): every
 * address the status holds stays, under its id; a kept container joins the
 * status's container of the same subnet with the assignments it lacks (a
 * repeated id gets a new one), or is added as it was when the status has
 * none of its subnet. A kept primary IP of a subnet the status already has
 * a container in is no pod's address, and is not carried.
 */
export function mergeKept(
  current: readonly NetworkContainer[],
  kept: readonly NetworkContainer[],
  newId: () => string,
): NetworkContainer[] {
  const out = structuredClone(current) as NetworkContainer[];
  for (const k of kept) {
    const into = out.find((nc) => nc.subnetAddressSpace === k.subnetAddressSpace);
    if (!into) {
      out.push(structuredClone(k));
      continue;
    }
    const have = addressesOf([into]);
    const ids = new Set((into.ipAssignments ?? []).map((a) => a.name));
    const add = (k.ipAssignments ?? [])
      .filter((a) => !have.has(a.ip))
      .map((a) => ({ name: ids.has(a.name) ? newId() : a.name, ip: a.ip }));
    if (add.length === 0) continue;
    into.ipAssignments = [...(into.ipAssignments ?? []), ...add];
    into.version = (typeof into.version === 'number' ? into.version : 0) + 1;
  }
  return out;
}

/** True when every address of `containers` is in the status. */
export function statusHolds(
  status: NncStatus | undefined,
  containers: readonly NetworkContainer[],
): boolean {
  const have = addressesOf(status?.networkContainers ?? []);
  for (const ip of addressesOf(containers)) if (!have.has(ip)) return false;
  return true;
}

/** Key-order-insensitive deep equality for JSON values. */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== typeof b || a === null || b === null || typeof a !== 'object') return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bb = b as unknown[];
    return a.length === bb.length && a.every((v, i) => jsonEqual(v, bb[i]));
  }
  const ao = a as Record<string, unknown>;
  const bo = b as Record<string, unknown>;
  const ak = Object.keys(ao).filter((k) => ao[k] !== undefined);
  const bk = Object.keys(bo).filter((k) => bo[k] !== undefined);
  return ak.length === bk.length && ak.every((k) => jsonEqual(ao[k], bo[k]));
}
