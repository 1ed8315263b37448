// Which addresses are in use, and by how many records (docs/decisions/0036):
// an index derived from the node records, never a record of its own. The
// book (node-book.ts) tells it each record's holdings as they change; the
// index counts holders per address, and tells its listeners each address
// that turns used or free (the CIDR backend's bitmap mirrors it).
import type { NetworkContainer } from '../nnc/types.ts';

export type AddressListener = (ip: string, used: boolean) => void;

/**
 * kube-apiserver's default --request-timeout (1m0s): a write in doubt this
 * long after it failed can no longer land.
 */
export const UNANSWERED_WRITE_MS = 60_000;

/** Every address containers hold: each one's primary and secondary IPs. */
export function addressesOf(containers: readonly NetworkContainer[]): Set<string> {
  const out = new Set<string>();
  for (const nc of containers) {
    if (typeof nc?.primaryIP === 'string' && nc.primaryIP !== '') out.add(nc.primaryIP);
    for (const a of Array.isArray(nc?.ipAssignments) ? nc.ipAssignments : []) {
      if (typeof a?.ip === 'string' && a.ip !== '') out.add(a.ip);
    }
  }
  return out;
}

export class AddressIndex {
  private readonly holders = new Map<string, number>();
  private readonly listeners: AddressListener[] = [];

  /** Hears every address that turns used (true) or free (false). */
  subscribe(listener: AddressListener): void {
    this.listeners.push(listener);
  }

  /** A record's holdings changed from `before` to `after` (the book calls this, nothing else). */
  update(before: ReadonlySet<string>, after: ReadonlySet<string>): void {
    for (const ip of after) if (!before.has(ip)) this.ref(ip, +1);
    for (const ip of before) if (!after.has(ip)) this.ref(ip, -1);
  }

  isUsed(ip: string): boolean {
    return (this.holders.get(ip) ?? 0) > 0;
  }

  /** How many records hold the address. */
  holdersOf(ip: string): number {
    return this.holders.get(ip) ?? 0;
  }

  /** Every address in use. */
  used(): IterableIterator<string> {
    return this.holders.keys();
  }

  get size(): number {
    return this.holders.size;
  }

  private ref(ip: string, delta: number): void {
    const before = this.holders.get(ip) ?? 0;
    const after = before + delta;
    if (after <= 0) this.holders.delete(ip);
    else this.holders.set(ip, after);
    if (before === 0 && after > 0) for (const l of this.listeners) l(ip, true);
    else if (before > 0 && after <= 0) for (const l of this.listeners) l(ip, false);
  }
}
