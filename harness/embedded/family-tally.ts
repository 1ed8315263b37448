// What the report says of the address families of a run: the pods the
// kubelets served, counted by the families of the addresses each got (a
// dual-stack run serves every pod one of each), and the NNCs' addresses by
// family at their peak. Fed by the kubelets' "running" notices and by the
// sampler's snapshots; pure of timers.
import {
  containerFamily,
  familyName,
  type FamilyName,
  type IpFamily,
} from '../../src/nnc/family.ts';
import { dynamicContainers, type NodeNetworkConfig } from '../../src/nnc/types.ts';
import { byFamily, familyProblem, type IpFamilyChoice } from './ip-family.ts';

/** The report's `families` section. */
export interface FamilyReport {
  ipFamily: IpFamilyChoice;
  /** The fulfiller's pod subnets, IPv4 first. */
  subnets: string[];
  /** Pods the kubelets ran with their addresses. */
  podsServed: number;
  /** Of those, the pods that got an address of each family. */
  podsWith: Partial<Record<FamilyName, number>>;
  /** Served with exactly one address of every family of the run and none of another. */
  podsWithEvery: number;
  /** Addresses in the NNCs' statuses (dynamic containers, all nodes), by family, at their highest. */
  peakAddresses: Partial<Record<FamilyName, number>>;
}

export class FamilyTally {
  private served = 0;
  private every = 0;
  private readonly podsWith = new Map<FamilyName, number>();
  private readonly peak = new Map<FamilyName, number>();
  private readonly ipFamily: IpFamilyChoice;
  private readonly families: readonly IpFamily[];
  private readonly subnets: readonly string[];

  constructor(ipFamily: IpFamilyChoice, families: readonly IpFamily[], subnets: readonly string[]) {
    this.ipFamily = ipFamily;
    this.families = families;
    this.subnets = subnets;
  }

  /** A pod runs with `ips` (the kubelet's notice). */
  servedWith(ips: readonly string[]): void {
    this.served += 1;
    for (const name of byFamily(ips).keys())
      this.podsWith.set(name, (this.podsWith.get(name) ?? 0) + 1);
    if (familyProblem(ips, this.families) === undefined) this.every += 1;
  }

  /** One snapshot of every NNC. */
  observe(nncs: readonly NodeNetworkConfig[]): void {
    const now = new Map<FamilyName, number>();
    for (const nnc of nncs)
      for (const nc of dynamicContainers(nnc)) {
        const f = containerFamily(nc);
        if (f === undefined) continue;
        const name = familyName(f);
        now.set(name, (now.get(name) ?? 0) + (nc.ipAssignments?.length ?? 0));
      }
    for (const [name, n] of now) this.peak.set(name, Math.max(n, this.peak.get(name) ?? 0));
  }

  report(): FamilyReport {
    const ordered = (m: Map<FamilyName, number>): Partial<Record<FamilyName, number>> => {
      const out: Partial<Record<FamilyName, number>> = {};
      for (const name of ['IPv4', 'IPv6'] as const) if (m.has(name)) out[name] = m.get(name);
      return out;
    };
    return {
      ipFamily: this.ipFamily,
      subnets: [...this.subnets],
      podsServed: this.served,
      podsWith: ordered(this.podsWith),
      podsWithEvery: this.every,
      peakAddresses: ordered(this.peak),
    };
  }
}

/** The report's address-families line. */
export function familyLine(f: FamilyReport): string {
  const kind = f.ipFamily === 'dual' ? 'dual-stack' : f.ipFamily === 'ipv6' ? 'IPv6' : 'IPv4';
  const with_ = (['IPv4', 'IPv6'] as const)
    .filter((n) => f.podsWith[n] !== undefined)
    .map((n) => `${f.podsWith[n]} with ${n}`);
  const peak = (['IPv4', 'IPv6'] as const)
    .filter((n) => f.peakAddresses[n] !== undefined)
    .map((n) => `${n} ${f.peakAddresses[n]}`);
  return (
    `  address families             ${kind} (${f.subnets.join(', ')}): ${f.podsServed} pods served` +
    `${with_.length ? `, ${with_.join(', ')}` : ''}` +
    `${f.ipFamily === 'dual' ? ` (${f.podsWithEvery} with both)` : ''}; ` +
    `NNC addresses at the peak ${peak.length ? peak.join(', ') : 'none'}`
  );
}

/** Why the run's families failed it: a pod served without an address of each family. */
export function familyProblems(f: FamilyReport): string[] {
  const half = f.podsServed - f.podsWithEvery;
  return half > 0
    ? [`${half} pod(s) served without exactly one address of each family (${f.ipFamily})`]
    : [];
}
