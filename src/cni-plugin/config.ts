// The plugin's input, parsed and checked before anything is asked of the
// node: the network configuration on stdin (its `ipam` section, or the top
// level for GC and STATUS invoked directly) and the CNI_* environment. Pure:
// each function returns a checked value or throws a CniError naming the key.
import { isIP } from 'node:net';
import { CniCode, CniError, invalidConfig } from './errors.ts';

export const PLUGIN_TYPE = 'pool-monitor-cni';
export const SUPPORTED_VERSIONS = ['0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0'] as const;
/** Where the DaemonSet's sidecar listens when it is locked down (README "Security"). */
export const DEFAULT_NODE_API = 'unix:/run/pool-monitor/cns.sock';
export const DEFAULT_TOKEN_FILE = '/run/pool-monitor/node-api-token';
/** How long ADD waits out "no address yet" (ReturnCode 32) by default. */
export const DEFAULT_ADD_TIMEOUT_SECONDS = 60;

export type NodeApiAddress =
  { kind: 'unix'; path: string } | { kind: 'http'; host: string; port: number };

export interface RouteConf {
  dst: string;
  gw?: string;
}

export interface IpamConfig {
  cniVersion: string;
  /** The network's name: the start of every attachment's interface id. */
  network: string;
  nodeAPI: NodeApiAddress;
  nodeAPIText: string;
  /** The bearer token's file; `required` when the configuration names it. */
  tokenFile: { path: string; required: boolean };
  /** Overrides the gateway the node's NNC gives. */
  gateway?: string;
  /** The routes the result carries (gateway filled in); default: a default route. */
  routes?: RouteConf[];
  dns?: { nameservers?: string[]; domain?: string; search?: string[]; options?: string[] };
  mtu?: number;
  addTimeoutSeconds: number;
  /** GC: the attachments the runtime still knows (`cni.dev/valid-attachments`). */
  validAttachments?: { containerID: string; ifname: string }[];
  /** CHECK: the result the chain gave at ADD. */
  prevResult?: unknown;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

function str(o: Obj, key: string, at: string): string | undefined {
  const v = o[key];
  if (v === undefined) return undefined;
  if (typeof v !== 'string' || v === '')
    throw invalidConfig(`${at}${key}`, 'must be a non-empty string');
  return v;
}

function ip(o: Obj, key: string, at: string): string | undefined {
  const v = str(o, key, at);
  if (v !== undefined && isIP(v) === 0)
    throw invalidConfig(`${at}${key}`, `is not an IP address: ${v}`);
  return v;
}

function strings(o: Obj, key: string, at: string): string[] | undefined {
  const v = o[key];
  if (v === undefined) return undefined;
  if (!Array.isArray(v) || v.some((s) => typeof s !== 'string'))
    throw invalidConfig(`${at}${key}`, 'must be an array of strings');
  return v as string[];
}

/** `unix:/path` or `http://host:port`. */
export function parseNodeApi(text: string, key = 'ipam.nodeAPI'): NodeApiAddress {
  if (text.startsWith('unix:')) {
    const path = text.slice('unix:'.length);
    if (!path.startsWith('/'))
      throw invalidConfig(key, `must name an absolute socket path: ${text}`);
    return { kind: 'unix', path };
  }
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw invalidConfig(key, `must be unix:/path or http://host:port, got ${JSON.stringify(text)}`);
  }
  if (url.protocol !== 'http:' || url.pathname !== '/' || url.search !== '')
    throw invalidConfig(key, `must be unix:/path or http://host:port, got ${JSON.stringify(text)}`);
  return { kind: 'http', host: url.hostname.replace(/^\[|\]$/g, ''), port: Number(url.port || 80) };
}

function parseRoutes(o: Obj, at: string): RouteConf[] | undefined {
  const v = o.routes;
  if (v === undefined) return undefined;
  if (!Array.isArray(v)) throw invalidConfig(`${at}routes`, 'must be an array of {dst, gw}');
  return v.map((r, i) => {
    if (!isObj(r)) throw invalidConfig(`${at}routes[${i}]`, 'must be an object {dst, gw}');
    const dst = str(r, 'dst', `${at}routes[${i}].`);
    const m = /^([^/]+)\/(\d{1,3})$/.exec(dst ?? '');
    if (!m || isIP(m[1]!) === 0 || Number(m[2]) > (isIP(m[1]!) === 4 ? 32 : 128))
      throw invalidConfig(`${at}routes[${i}].dst`, `must be a CIDR, got ${JSON.stringify(dst)}`);
    const gw = ip(r, 'gw', `${at}routes[${i}].`);
    return { dst: dst!, ...(gw ? { gw } : {}) };
  });
}

function parseDns(o: Obj, at: string): IpamConfig['dns'] {
  const v = o.dns;
  if (v === undefined) return undefined;
  if (!isObj(v))
    throw invalidConfig(`${at}dns`, 'must be an object {nameservers, domain, search, options}');
  const nameservers = strings(v, 'nameservers', `${at}dns.`);
  for (const [i, n] of (nameservers ?? []).entries())
    if (isIP(n) === 0)
      throw invalidConfig(`${at}dns.nameservers[${i}]`, `is not an IP address: ${n}`);
  const domain = str(v, 'domain', `${at}dns.`);
  const search = strings(v, 'search', `${at}dns.`);
  const options = strings(v, 'options', `${at}dns.`);
  return {
    ...(nameservers ? { nameservers } : {}),
    ...(domain ? { domain } : {}),
    ...(search ? { search } : {}),
    ...(options ? { options } : {}),
  };
}

function positive(o: Obj, key: string, at: string, max: number): number | undefined {
  const v = o[key];
  if (v === undefined) return undefined;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > max)
    throw invalidConfig(`${at}${key}`, `must be a whole number from 1 to ${max}`);
  return v;
}

function parseValidAttachments(conf: Obj): IpamConfig['validAttachments'] {
  const v = conf['cni.dev/valid-attachments'];
  if (v === undefined) return undefined;
  if (!Array.isArray(v)) throw invalidConfig('cni.dev/valid-attachments', 'must be an array');
  return v.map((a, i) => {
    const at = `cni.dev/valid-attachments[${i}].`;
    if (!isObj(a)) throw invalidConfig(at.slice(0, -1), 'must be an object {containerID, ifname}');
    const containerID = str(a, 'containerID', at);
    const ifname = str(a, 'ifname', at);
    if (!containerID || !ifname)
      throw invalidConfig(at.slice(0, -1), 'needs containerID and ifname');
    return { containerID, ifname };
  });
}

/** The cniVersion of a configuration, checked against what this plugin speaks. */
export function versionOf(conf: Obj): string {
  const v = conf.cniVersion;
  if (typeof v !== 'string' || v === '')
    throw invalidConfig('cniVersion', 'is required (a string such as "1.0.0")');
  if (!(SUPPORTED_VERSIONS as readonly string[]).includes(v))
    throw new CniError(
      CniCode.IncompatibleVersion,
      `incompatible CNI version ${v}: this plugin supports ${SUPPORTED_VERSIONS.join(', ')}`,
    );
  return v;
}

/** Parses stdin's JSON text. */
export function parseJson(text: string): Obj {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (err) {
    throw new CniError(
      CniCode.DecodeFailure,
      `the network configuration on stdin is not JSON: ${(err as Error).message}`,
    );
  }
  if (!isObj(v))
    throw new CniError(
      CniCode.DecodeFailure,
      'the network configuration on stdin must be a JSON object',
    );
  return v;
}

/**
 * The plugin's configuration: the `ipam` section of the network
 * configuration, or (GC and STATUS called on the plugin itself) its top level.
 */
export function parseConfig(conf: Obj): IpamConfig {
  const cniVersion = versionOf(conf);
  const network = conf.name;
  if (
    typeof network !== 'string' ||
    !/^[A-Za-z0-9][A-Za-z0-9_.-]*$/.test(network) ||
    network.length > 128
  )
    throw invalidConfig('name', 'must be a network name of letters, digits, _ . - (at most 128)');
  const hasIpam = conf.ipam !== undefined;
  if (hasIpam && !isObj(conf.ipam)) throw invalidConfig('ipam', 'must be an object');
  const ipam = hasIpam ? (conf.ipam as Obj) : conf;
  const at = hasIpam ? 'ipam.' : '';
  if (hasIpam && ipam.type !== PLUGIN_TYPE)
    throw invalidConfig('ipam.type', `must be "${PLUGIN_TYPE}", got ${JSON.stringify(ipam.type)}`);
  const nodeAPIText = str(ipam, 'nodeAPI', at) ?? DEFAULT_NODE_API;
  const tokenPath = str(ipam, 'tokenFile', at);
  if (tokenPath !== undefined && !tokenPath.startsWith('/'))
    throw invalidConfig(`${at}tokenFile`, 'must be an absolute path');
  const gateway = ip(ipam, 'gateway', at);
  const routes = parseRoutes(ipam, at);
  const dns = parseDns(ipam, at);
  const mtu = positive(ipam, 'mtu', at, 65535);
  const validAttachments = parseValidAttachments(conf);
  return {
    cniVersion,
    network,
    nodeAPI: parseNodeApi(nodeAPIText, `${at}nodeAPI`),
    nodeAPIText,
    tokenFile: { path: tokenPath ?? DEFAULT_TOKEN_FILE, required: tokenPath !== undefined },
    ...(gateway ? { gateway } : {}),
    ...(routes ? { routes } : {}),
    ...(dns ? { dns } : {}),
    ...(mtu ? { mtu } : {}),
    addTimeoutSeconds: positive(ipam, 'addTimeoutSeconds', at, 3600) ?? DEFAULT_ADD_TIMEOUT_SECONDS,
    ...(validAttachments ? { validAttachments } : {}),
    ...(conf.prevResult !== undefined ? { prevResult: conf.prevResult } : {}),
  };
}
