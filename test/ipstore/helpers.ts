// Shared builders for the IP store tests.
import type { NetworkContainer } from '../../src/nnc/types.ts';
import type { AssignRequest } from '../../src/ipstore/types.ts';

/** A dynamic network container with IPs `ip-<n>` = 10.<nc>.0.<n>. */
export function container(
  ncIndex: number,
  hosts: number[],
  extra: Partial<NetworkContainer> = {},
): NetworkContainer {
  return {
    id: `nc-${ncIndex}`,
    assignmentMode: 'dynamic',
    primaryIP: `10.${ncIndex}.0.1`,
    subnetAddressSpace: `10.${ncIndex}.0.0/24`,
    defaultGateway: `10.${ncIndex}.0.254`,
    ipAssignments: hosts.map((h) => ({ name: ipId(ncIndex, h), ip: `10.${ncIndex}.0.${h}` })),
    ...extra,
  };
}

export function ipId(ncIndex: number, host: number): string {
  return `ip-${ncIndex}-${host}`;
}

export function pod(n: number, desiredIPAddresses?: string[]): AssignRequest {
  return {
    podInterfaceID: `pod-${n}-eth0`,
    infraContainerID: `infra-${n}`,
    podName: `pod-${n}`,
    podNamespace: 'default',
    ...(desiredIPAddresses === undefined ? {} : { desiredIPAddresses }),
  };
}

/** A clock that advances 1 ms per call, from a fixed start. */
export function tickingClock(start = 1_700_000_000_000): () => number {
  let t = start;
  return () => t++;
}

/** An IPv6 dynamic network container with IPs `ip6-<n>` = fd00:<nc>::<n> (hex host). */
export function container6(
  ncIndex: number,
  hosts: number[],
  extra: Partial<NetworkContainer> = {},
): NetworkContainer {
  return {
    id: `nc6-${ncIndex}`,
    assignmentMode: 'dynamic',
    primaryIP: `fd00:${ncIndex}::1`,
    subnetAddressSpace: `fd00:${ncIndex}::/112`,
    defaultGateway: `fd00:${ncIndex}::fffe`,
    ipAssignments: hosts.map((h) => ({ name: ipId6(ncIndex, h), ip: ip6(ncIndex, h) })),
    ...extra,
  };
}

export function ipId6(ncIndex: number, host: number): string {
  return `ip6-${ncIndex}-${host}`;
}

export function ip6(ncIndex: number, host: number): string {
  return `fd00:${ncIndex}::${host.toString(16)}`;
}
