// The CNS wire contract the CNI speaks: paths, return codes and JSON shapes,
// named exactly as Azure CNS names them (mixed casing included), so an
// unmodified CNS client can use the sidecar as its IPAM endpoint.

export const PATHS = {
  healthz: '/healthz',
  readyz: '/readyz',
  metrics: '/metrics',
  debugPool: '/debug/pool',
  debugIpAddresses: '/debug/ipaddresses',
  requestIpConfigs: '/network/requestipconfigs',
  releaseIpConfigs: '/network/releaseipconfigs',
  // Ours, not CNS's: what a CNI plugin's CHECK and GC need (cni-plugin/, in Go).
  ipConfig: '/network/ipconfig',
  attachments: '/network/attachments',
} as const;

/** CNS `types.ResponseCode` values this API returns (the same numbers as CNS). */
export const ReturnCode = {
  Success: 0,
  InvalidParameter: 2,
  NotFound: 14,
  UnsupportedVerb: 21,
  InvalidRequest: 23,
  FailedToAllocateIPConfig: 32,
  UnexpectedError: 99,
} as const;
export type ReturnCodeValue = (typeof ReturnCode)[keyof typeof ReturnCode];

export interface CnsResponse {
  ReturnCode: number;
  Message: string;
}

export interface IPSubnet {
  IPAddress: string;
  PrefixLength: number;
}

export interface IPConfiguration {
  IPSubnet: IPSubnet;
  DNSServers: string[];
  GatewayIPAddress: string;
}

export interface PodIpInfo {
  PodIPConfig: IPSubnet;
  NetworkContainerPrimaryIPConfig: IPConfiguration;
}

/** Body of request/release ipconfigs responses. */
export interface IPConfigsResponse {
  podIPInfo: PodIpInfo[];
  response: CnsResponse;
}

/** `PodInfo` as CNS marshals it in the debug listing. */
export interface CnsPodInfo {
  PodName: string;
  PodNamespace: string;
  PodInfraContainerID: string;
  PodInterfaceID: string;
}

export interface IPConfigurationStatus {
  ID: string;
  IPAddress: string;
  NCID: string;
  State: string;
  PodInfo: CnsPodInfo | null;
}

export interface GetIPConfigurationStatusResponse {
  IPConfigurationStatus: IPConfigurationStatus[];
  Response: CnsResponse;
}

/** The error body of every non-IPAM failure (404, 405, 413, ...). */
export interface ErrorBody {
  error: string;
  response: CnsResponse;
}

/** One assignment as `/network/attachments` lists it (a CNI attachment: its interface id). */
export interface Attachment {
  podInterfaceID: string;
  infraContainerID: string;
  podName: string;
  podNamespace: string;
  /** The first address (IPv4 first): all of a single-stack pod's. */
  IPAddress: string;
  /** Every address of the attachment, one per family, IPv4 first. */
  IPAddresses: string[];
}

/** Body of `/network/attachments`. */
export interface AttachmentsResponse {
  attachments: Attachment[];
  response: CnsResponse;
}
