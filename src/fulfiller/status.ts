// The status the fulfiller writes for a node, computed from what it had, the
// plan and the freshly allocated addresses. Pure: ids come from an injected
// generator, so tests can check that kept IPs keep their uuid and new ones
// get one each.
import type { IpAssignment, NetworkContainer, NncStatus, ScalerSpec } from '../nnc/types.ts';

/** `status.status` values, as Azure's DNC reports them. */
export const STATUS_UPDATED = 'Updated';
export const STATUS_UPDATING = 'Updating';
export const STATUS_SUBNET_FULL = 'SubnetFull';

export interface DesiredStatusInput {
  previous: NncStatus | undefined;
  /** The managed container as it is now (or a new one, without ipAssignments). */
  container: NetworkContainer;
  /** True when the container did not exist in `previous`. */
  isNewContainer: boolean;
  keep: IpAssignment[];
  released: number;
  newIps: string[];
  requested: number;
  /** True when the subnet could not supply what was asked. */
  subnetShort: boolean;
  scaler: Required<ScalerSpec>;
  newId: () => string;
}

/** The whole new status; other network containers are carried over untouched. */
export function desiredStatus(input: DesiredStatusInput): NncStatus {
  const added = input.newIps.map((ip) => ({ name: input.newId(), ip }));
  const ipAssignments = [...input.keep, ...added];
  const changed = input.isNewContainer || added.length > 0 || input.released > 0;
  const previousVersion = typeof input.container.version === 'number' ? input.container.version : 0;
  const container: NetworkContainer = {
    ...input.container,
    assignmentMode: 'dynamic',
    version: input.isNewContainer ? 0 : changed ? previousVersion + 1 : previousVersion,
    ipAssignments,
  };
  const others = (input.previous?.networkContainers ?? []).filter((nc) => nc.id !== container.id);
  const existingIndex = (input.previous?.networkContainers ?? []).findIndex(
    (nc) => nc.id === container.id,
  );
  const networkContainers = [...others];
  networkContainers.splice(existingIndex < 0 ? others.length : existingIndex, 0, container);
  const state =
    ipAssignments.length >= input.requested
      ? STATUS_UPDATED
      : input.subnetShort
        ? STATUS_SUBNET_FULL
        : STATUS_UPDATING;
  return {
    ...input.previous,
    scaler: { ...input.scaler },
    networkContainers,
    assignedIPCount: ipAssignments.length,
    status: state,
  };
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
