// The IPAM operations behind the CNS endpoints, as pure-ish functions of the
// store: a parsed request in, an HTTP status and a CNS body out. No I/O here
// besides the (synchronous, transactional) store, so they are tested without
// a socket. Store failures other than "no free IP" become UnexpectedError;
// bad input never reaches the store. A dual-stack pod's answer holds one
// podIPInfo per family, IPv4 first, each with its own container's subnet
// and gateway (docs/design/contracts.md, "Address families").
import { isIP } from 'node:net';
import { NoAvailableIpError } from '../ipstore/types.ts';
import type { ContainerInfo, IpRecord, IpState, NodeIpStore, Released } from '../ipstore/types.ts';
import { ReturnCode } from './cns.ts';
import type {
  AttachmentsResponse,
  GetIPConfigurationStatusResponse,
  IPConfigsResponse,
  IPConfigurationStatus,
  PodIpInfo,
} from './cns.ts';
import { prefixLength } from './validate.ts';
import type { IpConfigsRequest } from './validate.ts';
import { errorText } from '../log/error-text.ts';

export interface Outcome<B> {
  status: number;
  body: B;
  /**
   * The record whose state changed, when one did; an assignment or release
   * of a dual-stack pod: the first address, all of them in `ips` (addressesOf).
   */
  changed?: IpRecord | Released;
  /** A server-side failure worth an error log line. */
  error?: string;
  /** Older assignments of the pod a new sandbox's request released (as they were). */
  replaced?: IpRecord[];
}

/**
 * What the API tells the sidecar after a state change (see NodeApiDeps.onChange):
 * an IP assigned, one released, or an older sandbox's IP released by a request
 * of the same pod (`replaced`, the record as it was).
 */
export interface IpamChange {
  kind: 'assigned' | 'released' | 'replaced';
  record: IpRecord;
}

/** Every address a change names: those of its `ips` when it has them, else its own. */
export function addressesOf(record: IpRecord | Released): string[] {
  return 'ips' in record ? record.ips.map((r) => r.ip) : [record.ip];
}

function hostBits(ip: string): number {
  return isIP(ip) === 6 ? 128 : 32;
}

/** The CNS PodIpInfo for an assigned record and its network container. */
export function podIpInfo(record: IpRecord, nc: ContainerInfo | undefined): PodIpInfo {
  const bits = prefixLength(nc?.subnetAddressSpace) ?? hostBits(record.ip);
  return {
    PodIPConfig: { IPAddress: record.ip, PrefixLength: bits },
    NetworkContainerPrimaryIPConfig: {
      IPSubnet: { IPAddress: nc?.primaryIP ?? '', PrefixLength: bits },
      DNSServers: [],
      GatewayIPAddress: nc?.defaultGateway ?? '',
    },
  };
}

/** One podIPInfo per record, each with its own container. */
function podIpInfos(store: NodeIpStore, records: readonly IpRecord[]): PodIpInfo[] {
  return records.map((r) => podIpInfo(r, store.container(r.ncId)));
}

export function requestIpConfigs(
  store: NodeIpStore,
  req: IpConfigsRequest,
): Outcome<IPConfigsResponse> {
  try {
    const record = store.assign({
      podInterfaceID: req.podInterfaceID,
      infraContainerID: req.infraContainerID,
      podName: req.podName,
      podNamespace: req.podNamespace,
      desiredIPAddresses: req.desiredIPAddresses,
    });
    const { replaced, ...assigned } = record;
    return {
      status: 200,
      body: {
        podIPInfo: podIpInfos(store, assigned.ips),
        response: { ReturnCode: ReturnCode.Success, Message: '' },
      },
      changed: assigned,
      ...(replaced ? { replaced } : {}),
    };
  } catch (err) {
    if (err instanceof NoAvailableIpError) {
      // CNS answers this with HTTP 200 and the code in the body; so do we.
      return {
        ...(err.replaced ? { replaced: err.replaced } : {}),
        status: 200,
        body: {
          podIPInfo: [],
          response: {
            ReturnCode: ReturnCode.FailedToAllocateIPConfig,
            Message: `AllocateIPConfig failed for ${req.podNamespace}/${req.podName}: ${errorText(err)}`,
          },
        },
      };
    }
    return unexpected(err);
  }
}

/** The answer while no IP may be handed out yet: ReturnCode 32, so the CNI retries. */
export function notYet(req: IpConfigsRequest, why: string): Outcome<IPConfigsResponse> {
  return {
    status: 200,
    body: {
      podIPInfo: [],
      response: {
        ReturnCode: ReturnCode.FailedToAllocateIPConfig,
        Message: `AllocateIPConfig deferred for ${req.podNamespace}/${req.podName}: ${why}`,
      },
    },
  };
}

export function releaseIpConfigs(
  store: NodeIpStore,
  req: IpConfigsRequest,
): Outcome<IPConfigsResponse> {
  try {
    const record = store.release(req.podInterfaceID);
    return {
      status: 200,
      body: { podIPInfo: [], response: { ReturnCode: ReturnCode.Success, Message: '' } },
      ...(record ? { changed: record } : {}),
    };
  } catch (err) {
    return unexpected(err);
  }
}

/**
 * The store's own input check (InvalidIpStoreInputError, matched by name so
 * this module does not depend on the store's error classes) means a bad
 * request: 400 and InvalidRequest, as for our own validation.
 */
export function isInvalidInput(err: unknown): boolean {
  return err instanceof Error && err.name === 'InvalidIpStoreInputError';
}

function unexpected(err: unknown): Outcome<IPConfigsResponse> {
  if (isInvalidInput(err)) {
    return {
      status: 400,
      body: {
        podIPInfo: [],
        response: { ReturnCode: ReturnCode.InvalidRequest, Message: errorText(err) },
      },
    };
  }
  return {
    status: 500,
    body: {
      podIPInfo: [],
      response: { ReturnCode: ReturnCode.UnexpectedError, Message: errorText(err) },
    },
    error: errorText(err),
  };
}

/** One store record as CNS's IPConfigurationStatus. */
export function ipConfigurationStatus(record: IpRecord): IPConfigurationStatus {
  return {
    ID: record.id,
    IPAddress: record.ip,
    NCID: record.ncId,
    State: record.state,
    PodInfo: record.pod
      ? {
          PodName: record.pod.podName,
          PodNamespace: record.pod.podNamespace,
          PodInfraContainerID: record.pod.infraContainerID,
          PodInterfaceID: record.pod.podInterfaceID,
        }
      : null,
  };
}

export function listIpAddresses(
  store: NodeIpStore,
  states: readonly IpState[],
): Outcome<GetIPConfigurationStatusResponse> {
  try {
    return {
      status: 200,
      body: {
        IPConfigurationStatus: store.list(states).map(ipConfigurationStatus),
        Response: { ReturnCode: ReturnCode.Success, Message: '' },
      },
    };
  } catch (err) {
    return {
      status: 500,
      body: {
        IPConfigurationStatus: [],
        Response: { ReturnCode: ReturnCode.UnexpectedError, Message: errorText(err) },
      },
      error: errorText(err),
    };
  }
}

/**
 * The assignment of one pod interface, as requestipconfigs answered it
 * (address, prefix, gateway): ReturnCode 14 (NotFound, HTTP 200) when the
 * interface holds no IP. For a CNI plugin's CHECK.
 */
export function lookupIpConfig(
  store: NodeIpStore,
  podInterfaceID: string,
): Outcome<IPConfigsResponse> {
  try {
    const records = store
      .list(['Assigned'])
      .filter((r) => r.pod?.podInterfaceID === podInterfaceID)
      .sort((a, b) => familyRank(a) - familyRank(b));
    if (records.length === 0) {
      return {
        status: 200,
        body: {
          podIPInfo: [],
          response: {
            ReturnCode: ReturnCode.NotFound,
            Message: `no IP is assigned to interface ${podInterfaceID}`,
          },
        },
      };
    }
    return {
      status: 200,
      body: {
        podIPInfo: podIpInfos(store, records),
        response: { ReturnCode: ReturnCode.Success, Message: '' },
      },
    };
  } catch (err) {
    return unexpected(err);
  }
}

/** IPv4 first, as every answer lists a dual-stack pod's addresses. */
function familyRank(r: IpRecord): number {
  return isIP(r.ip) === 4 ? 0 : 1;
}

/**
 * Every assignment whose interface id starts with `prefix` (every one for
 * ''), with its pod: what a CNI plugin's GC compares with the attachments
 * the runtime still knows. One entry per pod interface: `IPAddress` its
 * first address (IPv4 first), `IPAddresses` all of them.
 */
export function listAttachments(store: NodeIpStore, prefix: string): Outcome<AttachmentsResponse> {
  try {
    const byInterface = new Map<string, IpRecord[]>();
    for (const r of store.list(['Assigned'])) {
      const id = r.pod?.podInterfaceID;
      if (id === undefined || !id.startsWith(prefix)) continue;
      byInterface.set(id, [...(byInterface.get(id) ?? []), r]);
    }
    const attachments = [...byInterface].map(([podInterfaceID, records]) => {
      const ips = records.sort((a, b) => familyRank(a) - familyRank(b));
      const pod = ips[0]!.pod!;
      return {
        podInterfaceID,
        infraContainerID: pod.infraContainerID,
        podName: pod.podName,
        podNamespace: pod.podNamespace,
        IPAddress: ips[0]!.ip,
        IPAddresses: ips.map((r) => r.ip),
      };
    });
    return {
      status: 200,
      body: { attachments, response: { ReturnCode: ReturnCode.Success, Message: '' } },
    };
  } catch (err) {
    return {
      status: 500,
      body: {
        attachments: [],
        response: { ReturnCode: ReturnCode.UnexpectedError, Message: errorText(err) },
      },
      error: errorText(err),
    };
  }
}
