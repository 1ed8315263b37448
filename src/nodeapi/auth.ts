// Who may call what on the node API when --node-api-token-file is set: the
// endpoints that change the pool (the CNS IPAM calls) or name pods
// (/debug/ipaddresses lists every pod's interface id, /network/ipconfig and
// /network/attachments name pods too) need the token as a
// bearer; the probes, /metrics and /debug/pool (counts only) stay open for
// the kubelet and Prometheus. Without a token everything is open, as CNS is
// (the stock Azure CNI sends no credentials). Tokens are compared through
// digests in constant time.
import { sameSecret } from '../secrets/same-secret.ts';
import { PATHS } from './cns.ts';

export const PROTECTED_PATHS: ReadonlySet<string> = new Set([
  PATHS.requestIpConfigs,
  PATHS.releaseIpConfigs,
  PATHS.debugIpAddresses,
  PATHS.ipConfig,
  PATHS.attachments,
]);

export const UNAUTHORIZED_MESSAGE = 'this endpoint needs the node API token as a bearer token';
export const WWW_AUTHENTICATE = 'Bearer realm="pool-monitor node api"';

/** True when `path` may be served for this Authorization header. */
export function authorized(
  path: string,
  authorization: string | undefined,
  token: string | undefined,
): boolean {
  if (token === undefined || !PROTECTED_PATHS.has(path)) return true;
  const m = /^\s*bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
  return m !== null && sameSecret(m[1] as string, token);
}
