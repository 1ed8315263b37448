// Role assignments of the identity calling the emulator, and the 403s ARM
// answers when a request is outside them. The actions come from the one
// list the backend's role table is made of (src/azure/arm/actions.ts):
// the call's own action on the resource it names (AuthorizationFailed), and
// linked authorization on every resource the body of a write references
// (LinkedAuthorizationFailed): subnets, load-balancer pools and NAT rules,
// NSGs, public IPs, ASGs, application gateway pools; in a scale-set VM body
// also its image (a gallery in another tenant is refused whatever the
// roles), its user-assigned identities and its Key Vault secrets.
// Absent assignments: everything is allowed but the other tenant's image.
// An assignment grants its actions at its scope and everything below it
// (ARM ids, case ignored); an action may end in `*` (e.g. `Microsoft.Network/*`).
import type { LinkedProperty } from '../../src/azure/arm/actions.ts';
import { CALL_ACTIONS, LINKED_ACTIONS } from '../../src/azure/arm/actions.ts';
import type { ArmOperation } from '../../src/azure/arm/operations.ts';
import { OP_PATH } from './operations.ts';
import { ArmHttpError } from './errors.ts';

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

/** A user-assigned identity's assign action (Microsoft.ManagedIdentity operations). */
const ASSIGN_IDENTITY = 'Microsoft.ManagedIdentity/userAssignedIdentities/assign/action';
/** "Microsoft.Compute/galleries/images/versions/read: Gets the properties of Gallery Image Version". */
const READ_IMAGE = 'Microsoft.Compute/galleries/images/versions/read';
/** "Microsoft.KeyVault/vaults/deploy/action: Enables access to secrets in a key vault when deploying Azure resources". */
const DEPLOY_VAULT = 'Microsoft.KeyVault/vaults/deploy/action';

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

const idOf = (v: unknown): string | undefined =>
  isObject(v) && typeof v.id === 'string' ? v.id : undefined;

/**
 * Every resource a write's body references, with the action linked to it:
 * walks the whole body, so a NIC body and a scale-set VM's network profile
 * are read alike. Each (action, id) once.
 */
export function linkedNeeds(body: unknown): Needed[] {
  const out = new Map<string, Needed>();
  const add = (action: string, id: string | undefined): void => {
    if (id) out.set(`${action} ${id}`.toLowerCase(), { action, scope: id });
  };
  const walk = (v: unknown): void => {
    if (Array.isArray(v)) return v.forEach(walk);
    if (!isObject(v)) return;
    for (const [k, child] of Object.entries(v)) {
      if (k in LINKED_ACTIONS) {
        const action = LINKED_ACTIONS[k as LinkedProperty];
        for (const ref of Array.isArray(child) ? child : [child]) add(action, idOf(ref));
      }
      if (k === 'imageReference') add(READ_IMAGE, idOf(child));
      if (k === 'sourceVault') add(DEPLOY_VAULT, idOf(child));
      if (k === 'userAssignedIdentities' && isObject(child))
        for (const id of Object.keys(child)) add(ASSIGN_IDENTITY, id);
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
 * The action a request needs (CALL_ACTIONS, the backend's own list), on
 * what, and for a write the linked ones on every resource its body references.
 */
export function requestNeeds(
  operation: ArmOperation,
  url: URL,
  body: string,
  operationScope: (id: string) => string | undefined,
): [Needed | undefined, Needed[]] {
  const path = url.pathname.replace(/\/$/, '');
  const rg = /^(\/subscriptions\/[^/]+\/resourceGroups\/[^/]+)/i.exec(path)?.[1] ?? path;
  const action = CALL_ACTIONS[operation];
  if (!action) return [undefined, []];
  switch (operation) {
    case 'NetworkInterfaces.List':
      return [{ action, scope: rg }, []];
    case 'NetworkInterfaces.CreateOrUpdate':
    case 'ScaleSetVMs.Update':
      return [{ action, scope: path }, linkedNeeds(parsedOrUndefined(body))];
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
