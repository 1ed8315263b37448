// The IPAM operations behind the CNS endpoints, as pure-ish functions of the
// store: a parsed request in, an HTTP status and a CNS body out. No I/O here
// besides the (synchronous, transactional) store, so they are tested without
// a socket. Store failures other than "no free IP" become UnexpectedError;
// bad input never reaches the store.
import { isIP } from 'node:net';
import { NoAvailableIpError } from '../ipstore/types.ts';
import type { ContainerInfo, IpRecord, IpState, NodeIpStore } from '../ipstore/types.ts';
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
  /** The record whose state changed, when one did. */
  changed?: IpRecord;
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
        podIPInfo: [podIpInfo(assigned, store.container(assigned.ncId))],
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
    const record = store.list(['Assigned']).find((r) => r.pod?.podInterfaceID === podInterfaceID);
    if (!record) {
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
        podIPInfo: [podIpInfo(record, store.container(record.ncId))],
        response: { ReturnCode: ReturnCode.Success, Message: '' },
      },
    };
  } catch (err) {
    return unexpected(err);
  }
}

/**
 * Every Assigned IP whose interface id starts with `prefix` (every one for
 * ''), with its pod: what a CNI plugin's GC compares with the attachments
 * the runtime still knows.
 */
export function listAttachments(store: NodeIpStore, prefix: string): Outcome<AttachmentsResponse> {
  try {
    const attachments = store
      .list(['Assigned'])
      .filter((r) => r.pod !== undefined && r.pod.podInterfaceID.startsWith(prefix))
      .map((r) => ({
        podInterfaceID: r.pod!.podInterfaceID,
        infraContainerID: r.pod!.infraContainerID,
        podName: r.pod!.podName,
        podNamespace: r.pod!.podNamespace,
        IPAddress: r.ip,
      }));
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
