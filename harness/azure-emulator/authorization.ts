// Role assignments of the identity calling the emulator, and the 403s ARM
// answers when a request is outside them (AuthorizationFailed; for a NIC
// PUT that references a subnet it may not join, LinkedAuthorizationFailed).
// Absent assignments: everything is allowed. An assignment grants its
// actions at its scope and everything below it (ARM ids, case ignored);
// an action may end in `*` (e.g. `Microsoft.Network/*`).
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

/** Throws the 403 ARM answers when `need` (then each `linked`) is not granted. */
export function authorize(
  assignments: RoleAssignment[] | undefined,
  need: Needed | undefined,
  linked: Needed[] = [],
): void {
  if (!assignments || !need) return;
  const client = EMULATOR_CLIENT;
  if (!allowed(assignments, need)) {
    throw new ArmHttpError(
      403,
      'AuthorizationFailed',
      `The client '${client}' with object id '${client}' does not have authorization to perform action '${need.action}' over scope '${need.scope}' or the scope is invalid. If access was recently granted, please refresh your credentials.`,
    );
  }
  for (const l of linked) {
    if (allowed(assignments, l)) continue;
    throw new ArmHttpError(
      403,
      'LinkedAuthorizationFailed',
      `The client '${client}' with object id '${client}' has permission to perform action '${need.action}' on scope '${need.scope}'; however, it does not have permission to perform action '${l.action}' on the linked scope(s) '${l.scope}' or the linked scope(s) are invalid.`,
    );
  }
}
