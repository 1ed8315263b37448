// The status the fulfiller writes for a node, computed from what it had and
// what the backend now holds. Pure: the container's id comes from the caller
// (kept for an existing container, fresh for a new one), so tests can check
// that kept IPs keep their ids and the version moves only on change.
import type { NetworkContainer, NncStatus, ScalerSpec } from '../nnc/types.ts';
import type { HeldContainer } from './backend.ts';
import { addressesOf } from './ledger.ts';

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

export interface DesiredStatusInput {
  previous: NncStatus | undefined;
  /** The managed container as it will be written. */
  container: NetworkContainer;
  requested: number;
  /** True when the subnet could not supply what was asked. */
  subnetShort: boolean;
  scaler: Required<ScalerSpec>;
}

/** The whole new status; other network containers are carried over untouched. */
export function desiredStatus(input: DesiredStatusInput): NncStatus {
  const { container } = input;
  const before = input.previous?.networkContainers ?? [];
  const index = before.findIndex((nc) => nc.id === container.id);
  const networkContainers = [...before];
  if (index < 0) networkContainers.push(container);
  else networkContainers[index] = container;
  const assigned = container.ipAssignments?.length ?? 0;
  const state =
    assigned >= input.requested
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

/** The status of a recreated NNC: the containers its predecessor held, as they were. */
export function restoredStatus(
  previous: NncStatus | undefined,
  containers: readonly NetworkContainer[],
  scaler: Required<ScalerSpec>,
  requested: number,
): NncStatus {
  const ids = new Set(containers.map((nc) => nc.id));
  const others = (previous?.networkContainers ?? []).filter(
    (nc) => (nc.assignmentMode ?? 'dynamic') !== 'dynamic' && !ids.has(nc.id),
  );
  const assigned = containers[0]?.ipAssignments?.length ?? 0;
  return {
    ...previous,
    scaler: { ...scaler },
    networkContainers: [...others, ...structuredClone(containers)],
    assignedIPCount: assigned,
    status: assigned >= requested ? STATUS_UPDATED : STATUS_UPDATING,
  };
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
