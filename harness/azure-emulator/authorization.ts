// Role assignments of the identity calling the emulator, and the 403s ARM
// answers when a request is outside them. Every action comes from Azure's
// published resource provider operations (data/provider-operations.json,
// with its source), never from the product's lists, so an action the
// product's role table forgets is refused here as ARM would refuse it:
// - the call's own action, on the resource (or list) it names: the request
//   path's resource type (ARM's permission strings are
//   `{Provider}/{resourceType}/{action}`, the operations page says) and
//   `read` for a GET, `write` for a PUT (AuthorizationFailed);
// - linked authorization on every resource a write's body references
//   (LinkedAuthorizationFailed): for each referenced id, the action its
//   resource type publishes for being referenced (`joinIpConfiguration`,
//   else `join`, `assign` for an identity, `deploy` for a key vault; `read`
//   for a type that publishes none of these, a gallery image), so subnets,
//   load-balancer pools, NAT rules and pools, probes, NSGs, public IPs, ASGs
//   and application gateway pools are all checked, whatever the product
//   sends. A gallery image in another tenant is refused whatever the roles.
// Absent assignments: everything is allowed but the other tenant's image.
// An assignment grants its actions at its scope and everything below it
// (ARM ids, case ignored); an action may end in `*` (e.g. `Microsoft.Network/*`).
import published from './data/provider-operations.json' with { type: 'json' };
import { resourceTypeOf } from './arm-ids.ts';
import type { OperationName } from './operation-names.ts';
import { OP_PATH } from './operations.ts';
import { ArmHttpError } from './errors.ts';

/** Every published action, lower case. */
const PUBLISHED = new Set(published.operations.map((o) => o.action.toLowerCase()));

/** The published action `type/verb`, as published; undefined when Azure lists no such action. */
export function publishedAction(type: string, verb: string): string | undefined {
  const action = `${type}/${verb}`;
  const found = published.operations.find((o) => o.action.toLowerCase() === action.toLowerCase());
  return found?.action;
}

/**
 * The action that referencing `id` from a write needs: the first of these
 * its resource type publishes (an ipConfiguration joins an ASG by
 * `joinIpConfiguration`, a subnet or pool by `join`, an identity is
 * `assign`ed, a vault's secrets `deploy`ed), else `read`. Undefined for an
 * id that names no resource type.
 */
export function linkedActionFor(id: string): string | undefined {
  const type = resourceTypeOf(id);
  if (!type) return undefined;
  for (const verb of [
    'joinIpConfiguration/action',
    'join/action',
    'assign/action',
    'deploy/action',
  ]) {
    const action = publishedAction(type, verb);
    if (action) return action;
  }
  return publishedAction(type, 'read') ?? `${type}/read`;
}

/** Whether Azure publishes this action (tests of the data file). */
export const isPublished = (action: string): boolean => PUBLISHED.has(action.toLowerCase());

export interface RoleAssignment {
  /** e.g. /subscriptions/S/resourceGroups/nodes */
  scope: string;
  actions: string[];
}

export interface Needed {
  action: string;
  /** The resource (or resource group) the action is on. */
  scope: string;
}

const norm = (id: string): string => id.replace(/\/$/, '').toLowerCase();

function covers(assigned: string, scope: string): boolean {
  const a = norm(assigned);
  const s = norm(scope);
  return s === a || s.startsWith(`${a}/`);
}

function grants(pattern: string, action: string): boolean {
  const p = pattern.toLowerCase();
  const a = action.toLowerCase();
  return p.endsWith('*') ? a.startsWith(p.slice(0, -1)) : p === a;
}

export function allowed(assignments: RoleAssignment[], need: Needed): boolean {
  return assignments.some(
    (r) => covers(r.scope, need.scope) && r.actions.some((x) => grants(x, need.action)),
  );
}

export const EMULATOR_CLIENT = '00000000-0000-0000-0000-00000000c11e';
/** The tenant the emulator's identity is in; a linked resource in a subscription of another is refused. */
export const EMULATOR_TENANT = '00000000-0000-0000-0000-0000000e7e7a';

/** A referenced resource that is in a subscription of another tenant (ARM refuses the link). */
export interface ForeignLink {
  id: string;
  subscription: string;
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

const idOf = (v: unknown): string | undefined =>
  isObject(v) && typeof v.id === 'string' ? v.id : undefined;

/**
 * Every resource a write's body references, with the action linked to it:
 * every `{id}` object anywhere in the body that is not the written resource
 * or part of it (its own ipConfigurations), and the keys of
 * `userAssignedIdentities` (ids, as ARM's identity property has them).
 * Each (action, id) once.
 */
export function linkedNeeds(body: unknown, self = ''): Needed[] {
  const out = new Map<string, Needed>();
  const own = self.replace(/\/$/, '').toLowerCase();
  const add = (id: string | undefined): void => {
    if (!id || !id.startsWith('/subscriptions/')) return;
    const lower = id.toLowerCase();
    if (own && (lower === own || lower.startsWith(`${own}/`))) return;
    const action = linkedActionFor(id);
    if (action) out.set(`${action} ${id}`.toLowerCase(), { action, scope: id });
  };
  const walk = (v: unknown): void => {
    if (Array.isArray(v)) return v.forEach(walk);
    if (!isObject(v)) return;
    add(idOf(v));
    for (const [k, child] of Object.entries(v)) {
      if (k === 'userAssignedIdentities' && isObject(child)) Object.keys(child).forEach(add);
      walk(child);
    }
  };
  walk(body);
  return [...out.values()];
}

const clientOf = (): string =>
  `The client '${EMULATOR_CLIENT}' with object id '${EMULATOR_CLIENT}'`;

/**
 * Throws the 403 ARM answers when `need` is not granted (AuthorizationFailed),
 * or when linked resources are not: a linked resource in another tenant's
 * subscription (refused whatever the roles; Azure/OpenShift#41's message),
 * else every linked action not granted, in one LinkedAuthorizationFailed
 * (one action: kubernetes-sigs/cloud-provider-azure#1999's message; several
 * scopes of one action comma-separated, Azure/aad-pod-identity#339; several
 * actions "action(s) ... (respectively)").
 */
export function authorize(
  assignments: RoleAssignment[] | undefined,
  need: Needed | undefined,
  linked: Needed[] = [],
  foreign: ForeignLink[] = [],
): void {
  if (!need) return;
  if (assignments && !allowed(assignments, need)) {
    throw new ArmHttpError(
      403,
      'AuthorizationFailed',
      `${clientOf()} does not have authorization to perform action '${need.action}' over scope '${need.scope}' or the scope is invalid. If access was recently granted, please refresh your credentials.`,
    );
  }
  const other = foreign[0];
  if (other) {
    throw new ArmHttpError(
      403,
      'LinkedAuthorizationFailed',
      `${clientOf()} has permission to perform action '${need.action}' on scope '${need.scope}'; however, the current tenant '${EMULATOR_TENANT}' is not authorized to access linked subscription '${other.subscription}'.`,
    );
  }
  if (!assignments) return;
  const missing = linked.filter((l) => !allowed(assignments, l));
  if (missing.length === 0) return;
  const actions = [...new Set(missing.map((m) => m.action))];
  const scopes = missing.map((m) => m.scope).join(',');
  const what =
    actions.length === 1
      ? `action '${actions[0]}' on the linked scope(s) '${scopes}'`
      : `action(s) '${missing.map((m) => m.action).join(',')}' on the linked scope(s) '${scopes}' (respectively)`;
  throw new ArmHttpError(
    403,
    'LinkedAuthorizationFailed',
    `${clientOf()} has permission to perform action '${need.action}' on scope '${need.scope}'; however, it does not have permission to perform ${what} or the linked scope(s) are invalid.`,
  );
}

/** A subscription of another tenant (the scale-set VMs' gallery image is there). */
export const OTHER_TENANT_SUBSCRIPTION = '00000000-0000-0000-0000-00000000f0e1';

/** The linked resources in another tenant's subscriptions. */
export function foreignLinks(linked: Needed[]): ForeignLink[] {
  const out: ForeignLink[] = [];
  for (const l of linked) {
    const sub = /^\/subscriptions\/([^/]+)/i.exec(l.scope)?.[1];
    if (sub && sub.toLowerCase() === OTHER_TENANT_SUBSCRIPTION)
      out.push({ id: l.scope, subscription: sub });
  }
  return out;
}

/**
 * The action a request needs, on what (the call's own: its path's resource
 * type, `read` for GET and `write` for PUT, as published), and for a write
 * the linked ones on every resource its body references. Throws a 500 when
 * Azure publishes no such action (the data file lacks a row the emulator needs).
 */
export function requestNeeds(
  operation: OperationName,
  method: string,
  url: URL,
  body: string,
  operationScope: (id: string) => string | undefined,
): [Needed | undefined, Needed[]] {
  // Azure publishes no write action for a scale-set instance's NIC: ARM
  // refuses the write itself (the route's 405), whatever the roles.
  if (operation === 'Other' || operation === 'ScaleSetNetworkInterfaces.CreateOrUpdate') {
    return [undefined, []];
  }
  const path = url.pathname.replace(/\/$/, '');
  const rg = /^(\/subscriptions\/[^/]+\/resourceGroups\/[^/]+)/i.exec(path)?.[1] ?? path;
  const type = resourceTypeOf(path);
  const verb = method.toUpperCase() === 'GET' ? 'read' : 'write';
  const action = type ? publishedAction(type, verb) : undefined;
  if (!action) {
    throw new ArmHttpError(500, 'InternalServerError', `no published action ${type}/${verb}`);
  }
  switch (operation) {
    case 'NetworkInterfaces.List':
      return [{ action, scope: rg }, []];
    case 'NetworkInterfaces.CreateOrUpdate':
    case 'ScaleSetVMs.Update':
      return [{ action, scope: path }, linkedNeeds(parsedOrUndefined(body), path)];
    // A poll is a read of the operation, authorized at the resource group of
    // the resource its write changed: ARM's status URL is not under the
    // resource, so a role at the resource alone starts the operation but
    // cannot follow it (Azure docs, "Track asynchronous Azure operations",
    // permission for tracking async status; MicrosoftDocs/azure-docs#111535).
    // An unknown operation is the 404 below.
    case 'AsyncOperation.Get':
    case 'ComputeOperation.Get': {
      const scope = operationScope(OP_PATH.exec(path)?.[1] ?? '');
      return [scope ? { action, scope } : undefined, []];
    }
    case 'VirtualNetworks.ListUsage':
      return [{ action, scope: path.replace(/\/usages$/i, '') }, []];
    default:
      return [{ action, scope: path }, []];
  }
}

/** A body's JSON, or undefined (the handler answers a bad body with its own 400). */
function parsedOrUndefined(body: string): unknown {
  try {
    return JSON.parse(body) as unknown;
  } catch {
    return undefined;
  }
}
