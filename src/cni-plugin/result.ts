// The IPAM result (spec "Success") built from the sidecar's answer and the
// configuration: the address with the pod subnet's prefix, the gateway, the
// routes (a default route through the gateway unless `routes` says
// otherwise) and DNS. Pure.
import { isIP } from 'node:net';
import type { PodIpInfo } from '../nodeapi/cns.ts';
import { CniCode, CniError } from './errors.ts';
import type { IpamConfig } from './config.ts';

export interface IpamResult {
  cniVersion: string;
  ips: { address: string; gateway?: string; version?: string }[];
  routes: { dst: string; gw?: string; mtu?: number }[];
  dns: NonNullable<IpamConfig['dns']>;
}

/** Versions before 1.0.0 carry `version` in each ips entry; 1.1.0 routes may carry `mtu`. */
const before1 = (v: string): boolean => v.startsWith('0.');

export function buildResult(conf: IpamConfig, info: PodIpInfo): IpamResult {
  const address = info.PodIPConfig?.IPAddress;
  const prefix = info.PodIPConfig?.PrefixLength;
  const family = isIP(address ?? '');
  if (family === 0 || typeof prefix !== 'number')
    throw new CniError(
      CniCode.NodeApiError,
      `the node API answered without an address: ${JSON.stringify(info)}`,
    );
  const fromNnc = info.NetworkContainerPrimaryIPConfig?.GatewayIPAddress;
  const gateway = conf.gateway ?? (fromNnc && isIP(fromNnc) === family ? fromNnc : undefined);
  const ipEntry = {
    address: `${address}/${prefix}`,
    ...(gateway ? { gateway } : {}),
    ...(before1(conf.cniVersion) ? { version: family === 4 ? '4' : '6' } : {}),
  };
  const wanted = conf.routes ?? (gateway ? [{ dst: family === 4 ? '0.0.0.0/0' : '::/0' }] : []);
  const routes = wanted
    .filter((r) => isIP(r.dst.split('/')[0]!) === family)
    .map((r) => ({
      dst: r.dst,
      ...((r.gw ?? gateway) ? { gw: r.gw ?? gateway } : {}),
      ...(conf.mtu && conf.cniVersion === '1.1.0' ? { mtu: conf.mtu } : {}),
    }));
  return { cniVersion: conf.cniVersion, ips: [ipEntry], routes, dns: conf.dns ?? {} };
}

/** The addresses (without prefix) of a prevResult, for CHECK. */
export function addressesOf(prevResult: unknown): string[] {
  const ips = (prevResult as { ips?: { address?: unknown }[] } | undefined)?.ips;
  if (!Array.isArray(ips)) return [];
  return ips
    .map((e) => (typeof e?.address === 'string' ? e.address.split('/')[0]! : ''))
    .filter((a) => a !== '');
}
