// The store follows the NNC: for every valid NodeNetworkConfig the node sees,
// the store's inventory follows the dynamic network containers of its status
// (new IPs Available, IPs that left removed, an Assigned IP never), before
// the monitor sees that NNC; the first one also restores PendingRelease from
// `spec.ipsNotInUse`. The sidecar and `simulate`'s virtual node both run
// this, so the simulator takes the product's path.
import type { Logger } from '../log/logger.ts';
import { dynamicContainers, invalidNncReason, type NodeNetworkConfig } from '../nnc/types.ts';
import { InvalidIpStoreInputError, type IpRecord, type NodeIpStore } from './types.ts';
import { errorText } from '../log/error-text.ts';

/** What an operator must hear about (the sidecar turns these into Events). */
export type StoreNotice =
  { type: 'assigned-vanished'; records: IpRecord[] } | { type: 'invalid-status'; message: string };

/**
 * 'synced': the store's inventory followed this NNC; 'unchanged': it already
 * did, the NNC's containers being those of the last sync (a spec write, a
 * status that changed elsewhere); false: invalid, or the sync failed.
 */
export type FollowResult = 'synced' | 'unchanged' | false;

export interface NncFollower {
  follow(nnc: NodeNetworkConfig): FollowResult;
  /** False after the store failed to write (disk, corruption), until a sync succeeds. */
  healthy(): boolean;
}

function announcedIds(nnc: NodeNetworkConfig): string[] {
  const ids = nnc.spec?.ipsNotInUse;
  return Array.isArray(ids) ? ids.filter((id): id is string => typeof id === 'string') : [];
}

/**
 * The status field a store error names: `networkContainers[k]...` of the
 * dynamic containers the store was given, as `status.networkContainers[i]...`.
 */
export function statusField(nnc: NodeNetworkConfig, field: string | undefined): string {
  if (field === undefined) return 'status.networkContainers';
  const m = /^networkContainers\[(\d+)\](.*)$/.exec(field);
  if (!m) return `status.${field}`;
  const nc = dynamicContainers(nnc)[Number(m[1])];
  const all: unknown = nnc.status?.networkContainers;
  const i = Array.isArray(all) ? all.indexOf(nc) : -1;
  return `status.networkContainers[${i < 0 ? m[1] : i}]${m[2]}`;
}

export function followNnc(
  store: NodeIpStore,
  options: { logger: Logger; notify?: (notice: StoreNotice) => void },
): NncFollower {
  const { logger: log, notify = () => {} } = options;
  let restored = false;
  let failed = false;
  // The containers of the last sync that left nothing to retry, as JSON. The
  // store changes its rows only at a sync or when a pod lets go of an IP the
  // status no longer backs (which a sync would not bring back), so syncing
  // the same containers again changes nothing - unless it reported a
  // conflict, which waits for the next sync (inventory-plan.ts).
  let lastSynced: string | undefined;
  return {
    healthy: () => !failed,
    follow(nnc) {
      if (invalidNncReason(nnc) !== undefined) return false; // the monitor warns and ignores it
      const containers = dynamicContainers(nnc);
      const key = JSON.stringify(containers);
      if (key === lastSynced && !failed) return 'unchanged';
      lastSynced = undefined;
      try {
        const change = store.syncInventory(containers);
        if (change.added.length > 0 || change.removed.length > 0) {
          log.info('inventory synced', {
            added: change.added.length,
            removed: change.removed.length,
          });
        }
        if (change.assignedVanished.length > 0) {
          log.error('Assigned IP vanished from status', {
            ips: change.assignedVanished.map((r) => ({ id: r.id, ip: r.ip, pod: r.pod?.podName })),
          });
          notify({ type: 'assigned-vanished', records: change.assignedVanished });
        }
        if (change.conflicts && change.conflicts.length > 0) {
          log.warn('inventory conflicts', { conflicts: change.conflicts });
        }
        if (!restored) {
          restored = true;
          const result = store.restorePendingRelease(announcedIds(nnc));
          if (result) log.info('pending release restored', { ...result });
        }
        failed = false;
        if (!change.conflicts || change.conflicts.length === 0) lastSynced = key;
        return 'synced';
      } catch (err) {
        // Garbage in the status changes nothing and is reported, naming the
        // field; only a store that cannot write (disk, corruption) makes the
        // agent unhealthy.
        if (!(err instanceof InvalidIpStoreInputError)) {
          failed = true;
          log.error('inventory sync failed', { error: errorText(err) });
          return false;
        }
        log.warn('rejected NodeNetworkConfig', {
          kind: 'NodeNetworkConfig',
          namespace: nnc.metadata?.namespace,
          name: nnc.metadata?.name,
          resourceVersion: nnc.metadata?.resourceVersion,
          field: statusField(nnc, err.field),
          error: errorText(err),
        });
        notify({ type: 'invalid-status', message: errorText(err) });
        return false;
      }
    },
  };
}
