// Pod ipConfigurations another writer removed from a node's NIC while its NNC
// still lists them (cloud-provider-azure's whole-NIC PUT from a stale read;
// a scale-set reimage): what one round puts back with the same name and
// address (`Static`), and what it cannot (lost: the address was given to
// another NIC, `PrivateIPAddressInUse`, or the NIC is a Uniform scale-set
// instance's, whose model cannot name an address). Lost ones are replaced by
// fresh addresses in the same write. Pure.
import type { NetworkInterface } from '@azure/arm-network';
import type { NetworkContainer } from '../nnc/types.ts';
import { NC_PRIMARY_NAME } from './nic-plan.ts';

export interface RemovedConfig {
  name: string;
  ip: string;
}

/** What the NNC lists that the NIC lacks, and this round does not release. */
export function missingConfigs(
  nic: NetworkInterface,
  container: NetworkContainer | undefined,
  remove: string[],
): RemovedConfig[] {
  const on = new Set((nic.ipConfigurations ?? []).map((c) => c.name?.toLowerCase()));
  const released = new Set(remove.map((r) => r.toLowerCase()));
  const out = (container?.ipAssignments ?? [])
    .filter((a) => !on.has(a.name.toLowerCase()) && !released.has(a.name.toLowerCase()))
    .map((a) => ({ name: a.name, ip: a.ip }));
  if (out.length > 0 && container?.primaryIP && !on.has(NC_PRIMARY_NAME)) {
    out.unshift({ name: NC_PRIMARY_NAME, ip: container.primaryIP });
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
    return this.lost.filter((l) => l.name !== NC_PRIMARY_NAME).length;
  }

  /**
   * A PUT refused: with `PrivateIPAddressInUse`, the addresses it names (all
   * still to restore when it names none) are lost, and true (try again).
   */
  refused(err: unknown): boolean {
    const e = err as { code?: string; message?: string };
    if (e?.code !== 'PrivateIPAddressInUse' || this.restore.length === 0) return false;
    const words = new Set((e.message ?? '').split(/[^0-9.]+/));
    const named = this.restore.filter((r) => words.has(r.ip));
    const gone = named.length > 0 ? named : this.restore;
    this.lost.push(...gone);
    this.restore = this.restore.filter((r) => !gone.includes(r));
    return true;
  }
}
