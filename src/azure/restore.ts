// Pod ipConfigurations another writer removed from a node's NIC while its NNC
// still lists them (cloud-provider-azure's whole-NIC PUT from a stale read;
// a scale-set reimage): what one round puts back with the same name and
// address (`Static`), and what it cannot (lost: ARM refused the address, or
// the NIC is a Uniform scale-set instance's, whose model cannot name an
// address). Lost ones are replaced by fresh addresses in the same write.
// ARM refuses a Static address with 400 and names it in its message
// (restoreRefusal below); each refusal drops just the address it names, so
// one taken address never blocks the node's round, and the round tries at
// most one PUT more than it has addresses to restore. Each address family's
// container is restored on its own (its own NC primary: ip-family.ts), in the
// same PUT. Pure.
import { isIP } from 'node:net';
import type { NetworkInterface } from '@azure/arm-network';
import type { IpFamily } from '../nnc/family.ts';
import type { NetworkContainer } from '../nnc/types.ts';
import { tryIp6ToBig } from '../fulfiller/cidr6.ts';
import { isNcPrimaryName, ncPrimaryName } from './ip-family.ts';

export interface RemovedConfig {
  name: string;
  ip: string;
}

/** What the family's container lists that the NIC lacks, and this round does not release. */
export function missingConfigs(
  nic: NetworkInterface,
  container: NetworkContainer | undefined,
  remove: string[],
  family: IpFamily = 4,
): RemovedConfig[] {
  const on = new Set((nic.ipConfigurations ?? []).map((c) => c.name?.toLowerCase()));
  const released = new Set(remove.map((r) => r.toLowerCase()));
  const out = (container?.ipAssignments ?? [])
    .filter((a) => !on.has(a.name.toLowerCase()) && !released.has(a.name.toLowerCase()))
    .map((a) => ({ name: a.name, ip: a.ip }));
  const primary = ncPrimaryName(family);
  if (out.length > 0 && container?.primaryIP && !on.has(primary)) {
    out.unshift({ name: primary, ip: container.primaryIP });
  }
  return out;
}

export class Restoration {
  restore: RemovedConfig[];
  readonly lost: RemovedConfig[] = [];

  constructor(missing: RemovedConfig[], canNameAddresses: boolean) {
    this.restore = canNameAddresses ? missing : [];
    if (!canNameAddresses) this.lost.push(...missing);
  }

  /**
   * The NIC was read again (a 412, a SubnetIsFull): what it lacks now, less
   * what is already known lost, is to be restored (or lost, without
   * addresses to name).
   */
  update(missing: RemovedConfig[], canNameAddresses: boolean): void {
    const lost = new Set(this.lost.map((l) => l.name));
    const fresh = missing.filter((m) => !lost.has(m.name));
    if (canNameAddresses) this.restore = fresh;
    else this.lost.push(...fresh);
  }

  /** Fresh secondaries that replace the lost ones (the NC primary is made anew anyway). */
  get replacements(): number {
    return this.lost.filter((l) => !isNcPrimaryName(l.name)).length;
  }

  /**
   * A PUT refused: when ARM refused a Static address (restoreRefusal), the
   * address it names is lost (all still to restore when it names none of
   * them), and true (try again without it).
   */
  refused(err: unknown): boolean {
    const refusal = restoreRefusal(err);
    if (!refusal || this.restore.length === 0) return false;
    const named = this.restore.filter((r) => sameIp(r.ip, refusal.ip));
    const gone = named.length > 0 ? named : this.restore;
    this.lost.push(...gone);
    this.restore = this.restore.filter((r) => !gone.includes(r));
    return true;
  }
}

/**
 * The 400s ARM answers for a Static address it will not give this NIC, and
 * where each names the address (docs/design/fulfiller.md, "Other writers of
 * the same NICs"):
 * - `PrivateIPAddressIsAllocated`: "IP configuration <id> is using the
 *   private IP address <ip> which is already allocated to resource <id>."
 *   (daniel-rhoades/acs-engine-terraform#10): another NIC holds it;
 * - `PrivateIPAddressInReservedRange` ("Private static IP address <ip> falls
 *   within reserved IP range ...", hashicorp/terraform-provider-azurerm#4225)
 *   and `PrivateIPAddressNotInSubnet`: not an address of the subnet (any
 *   more);
 * - `PrivateIPAddressInUse`, kept from before: the code ARM uses for other
 *   resources' private addresses.
 */
const STATIC_REFUSALS = new Set([
  'PrivateIPAddressIsAllocated',
  'PrivateIPAddressInReservedRange',
  'PrivateIPAddressNotInSubnet',
  'PrivateIPAddressInUse',
]);

/** Where ARM's messages name the address (IPv4 or IPv6), the likeliest first. */
const NAMED_ADDRESS = [
  /\bprivate IP address ([0-9A-Fa-f:.]*[0-9A-Fa-f])/i,
  /\bstatic IP address ([0-9A-Fa-f:.]*[0-9A-Fa-f])/i,
  /\b(\d{1,3}(?:\.\d{1,3}){3})\b/,
  /(?:^|[\s(])([0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7})(?=[\s.,)]|$)/,
];

/** Two texts of one address (an IPv6 one written either way). */
export function sameIp(a: string, b: string | undefined): boolean {
  if (b === undefined) return false;
  if (a === b) return true;
  const [x, y] = [tryIp6ToBig(a), tryIp6ToBig(b)];
  return x !== undefined && x === y;
}

/** ARM refused a Static address: its code, and the address its message names (if any). Pure. */
export function restoreRefusal(err: unknown): { code: string; ip?: string } | undefined {
  const e = err as { code?: unknown; message?: unknown } | undefined;
  if (typeof e?.code !== 'string' || !STATIC_REFUSALS.has(e.code)) return undefined;
  const message = typeof e.message === 'string' ? e.message : '';
  for (const re of NAMED_ADDRESS) {
    const ip = re.exec(message)?.[1];
    if (ip && isIP(ip)) return { code: e.code, ip };
  }
  return { code: e.code };
}
