// Pure parsing of the IPAM request bodies. Everything the CNI sends is
// untrusted: each function either returns a fully checked value or a
// `{ error }` naming the first thing wrong, and never throws.
//
// `orchestratorContext` is a json.RawMessage in CNS that the CNI fills with a
// marshalled KubernetesPodInfo, so it arrives as an object. Some clients
// marshal it twice and send a JSON string; that string is accepted when it
// holds such an object, anything else is refused.
import { isIP } from 'node:net';
import { IP_STATES } from '../ipstore/types.ts';
import type { IpState } from '../ipstore/types.ts';

export type Parsed<T> = { ok: true; value: T } | { ok: false; error: string };

export interface IpConfigsRequest {
  podInterfaceID: string;
  infraContainerID: string;
  podName: string;
  podNamespace: string;
  desiredIPAddresses: string[];
}

export const MAX_ID_LENGTH = 256;
export const MAX_NAME_LENGTH = 253;
export const MAX_DESIRED_IPS = 16;

const ok = <T>(value: T): Parsed<T> => ({ ok: true, value });
const fail = <T>(error: string): Parsed<T> => ({ ok: false, error });

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  return `a ${typeof v}`;
}

/** A required, non-blank string without control characters, at most `max` long. */
function text(obj: Record<string, unknown>, field: string, max: number): Parsed<string> {
  const v = obj[field];
  if (v === undefined) return fail(`${field} is required`);
  if (typeof v !== 'string') return fail(`${field} must be a string, got ${describe(v)}`);
  if (v.trim() === '') return fail(`${field} must not be empty`);
  if (v.length > max) return fail(`${field} is longer than ${max} characters`);
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(v)) return fail(`${field} contains control characters`);
  return ok(v);
}

function orchestratorContext(raw: unknown): Parsed<{ podName: string; podNamespace: string }> {
  let ctx = raw;
  if (raw === undefined || raw === null) return fail('orchestratorContext is required');
  if (typeof raw === 'string') {
    try {
      ctx = JSON.parse(raw) as unknown;
    } catch {
      return fail('orchestratorContext is a string that is not JSON');
    }
  }
  if (!isObject(ctx)) {
    return fail(
      `orchestratorContext must be an object {PodName, PodNamespace}, got ${describe(ctx)}`,
    );
  }
  const name = text(ctx, 'PodName', MAX_NAME_LENGTH);
  if (!name.ok) return fail(`orchestratorContext.${name.error}`);
  const ns = text(ctx, 'PodNamespace', MAX_NAME_LENGTH);
  if (!ns.ok) return fail(`orchestratorContext.${ns.error}`);
  return ok({ podName: name.value, podNamespace: ns.value });
}

function desired(raw: unknown): Parsed<string[]> {
  if (raw === undefined || raw === null) return ok([]);
  if (!Array.isArray(raw)) {
    return fail(`desiredIPAddresses must be an array of strings, got ${describe(raw)}`);
  }
  if (raw.length > MAX_DESIRED_IPS) {
    return fail(`desiredIPAddresses has more than ${MAX_DESIRED_IPS} entries`);
  }
  const out: string[] = [];
  for (const [i, ip] of raw.entries()) {
    if (typeof ip !== 'string' || isIP(ip) === 0) {
      return fail(`desiredIPAddresses[${i}] is not an IP address`);
    }
    if (!out.includes(ip)) out.push(ip);
  }
  return ok(out);
}

/** Parses the body of `requestipconfigs` and `releaseipconfigs`. */
export function parseIpConfigsRequest(body: unknown): Parsed<IpConfigsRequest> {
  if (!isObject(body)) return fail(`request body must be a JSON object, got ${describe(body)}`);
  const podInterfaceID = text(body, 'podInterfaceID', MAX_ID_LENGTH);
  if (!podInterfaceID.ok) return podInterfaceID;
  const infraContainerID = text(body, 'infraContainerID', MAX_ID_LENGTH);
  if (!infraContainerID.ok) return infraContainerID;
  const ctx = orchestratorContext(body.orchestratorContext);
  if (!ctx.ok) return ctx;
  const ips = desired(body.desiredIPAddresses);
  if (!ips.ok) return ips;
  return ok({
    podInterfaceID: podInterfaceID.value,
    infraContainerID: infraContainerID.value,
    podName: ctx.value.podName,
    podNamespace: ctx.value.podNamespace,
    desiredIPAddresses: ips.value,
  });
}

/** Parses the body of `/network/ipconfig`: `{podInterfaceID}`. */
export function parseInterfaceLookup(body: unknown): Parsed<string> {
  if (!isObject(body)) return fail(`request body must be a JSON object, got ${describe(body)}`);
  return text(body, 'podInterfaceID', MAX_ID_LENGTH);
}

/**
 * Parses the body of `/network/attachments`: `{podInterfaceIDPrefix}`, the
 * start every listed interface id has (a CNI network's own prefix); absent
 * or empty: every assignment.
 */
export function parseAttachmentsQuery(body: unknown): Parsed<string> {
  if (!isObject(body)) return fail(`request body must be a JSON object, got ${describe(body)}`);
  const raw = body.podInterfaceIDPrefix;
  if (raw === undefined || raw === null || raw === '') return ok('');
  if (typeof raw !== 'string') {
    return fail(`podInterfaceIDPrefix must be a string, got ${describe(raw)}`);
  }
  return text(body, 'podInterfaceIDPrefix', MAX_ID_LENGTH);
}

/**
 * Parses the body of `/debug/ipaddresses`: `{IPConfigStateFilter: [...]}`.
 * An absent or empty filter lists every IP. CNS's older name for Assigned,
 * `Allocated`, is accepted as the same state.
 */
export function parseStateFilter(body: unknown): Parsed<IpState[]> {
  if (!isObject(body)) return fail(`request body must be a JSON object, got ${describe(body)}`);
  const raw = body.IPConfigStateFilter;
  if (raw === undefined || raw === null) return ok([...IP_STATES]);
  if (!Array.isArray(raw)) {
    return fail(`IPConfigStateFilter must be an array of states, got ${describe(raw)}`);
  }
  if (raw.length === 0) return ok([...IP_STATES]);
  const states: IpState[] = [];
  for (const [i, s] of raw.entries()) {
    const state = s === 'Allocated' ? 'Assigned' : s;
    if (typeof state !== 'string' || !(IP_STATES as readonly string[]).includes(state)) {
      return fail(`IPConfigStateFilter[${i}] must be one of ${IP_STATES.join(', ')}`);
    }
    if (!states.includes(state as IpState)) states.push(state as IpState);
  }
  return ok(states);
}

/** The prefix length of a CIDR such as `10.240.0.0/16`, or undefined when it is not one. */
export function prefixLength(cidr: string | undefined): number | undefined {
  if (cidr === undefined) return undefined;
  const m = /^([^/]+)\/(\d{1,3})$/.exec(cidr.trim());
  if (!m) return undefined;
  const family = isIP(m[1] as string);
  const bits = Number(m[2]);
  if (family === 0 || bits > (family === 4 ? 32 : 128)) return undefined;
  return bits;
}
