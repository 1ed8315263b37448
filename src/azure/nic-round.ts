// One round for one node is ONE PUT of its whole NIC with If-Match:
//   NIC as last read/written ─ planNic(add, remove) ─ PUT ─ LRO ─ re-read ─ container
// 412, or an operation ARM canceled as superseded by a later one: re-read
// and recompute (bounded, together). SubnetIsFull (HTTP 400 or a failed
// LRO): the subnet is reported full, the usage re-read, and the round tried
// again with what still fits, then with no additions; never more than three
// PUTs for one full round, so nothing loops hot (the fulfiller's backoff
// spaces rounds). Azure's caps (256 per NIC, 256 per VM, the virtual
// network's) are counted before the PUT and, when ARM reports one, not
// retried: the node is told why (NodeSetupError → a Warning Event) and the
// limit counted. What another writer removed is put back in the same PUT
// (restore.ts, removal-audit.ts).
//
// On a dual-stack pod subnet the round changes both families' pod
// addresses in that one PUT (docs/design/fulfiller.md, "Dual-stack on
// Azure"): each family has its own subnet figures (pod-subnets.ts), its own
// NC primary and its own restorations; a SubnetIsFull is the family's whose
// prefix ARM's message names (every family that was adding when it names
// none), and only that family's request is cut on the retry.
import type { NetworkInterface } from '@azure/arm-network';
import type { IpFamily } from '../nnc/family.ts';
import { cidrFamily } from '../nnc/family.ts';
import { heldContainer } from './container.ts';
import type { PodSubnetFacts } from './container.ts';
import type { NicRef } from './nic-api.ts';
import { armErrorKind, nicLabel } from './nic-api.ts';
import type { FoundNic, NicDirectory } from './nic-directory.ts';
import type { FamilyPlan, NicFamiliesPlan } from './nic-plan.ts';
import { planNicFamilies } from './nic-plan.ts';
import type { NodeNics } from './node-nics.ts';
import type { PodSubnet } from './pod-subnet.ts';
import type { RemovalAudit } from './removal-audit.ts';
import type { ScaleSetPolicies } from './scale-set-policy.ts';
import type { PodSubnets } from './pod-subnets.ts';
import { missingConfigs, Restoration, restoreRefusal, sameIp } from './restore.ts';
import type { BackendCounters } from './stats.ts';
import type {
  ApplyResult,
  FamilyChange,
  HeldContainer,
  NodeRef,
  PoolChange,
} from '../fulfiller/backend.ts';
import { NodeSetupError, SubnetFullError } from '../fulfiller/backend.ts';

export interface NicRoundsOptions {
  directory: NicDirectory;
  podSubnets: PodSubnets;
  nics: NodeNics;
  audit: RemovalAudit;
  /** Uniform scale sets' upgrade policies (their nodes are refused unless Manual). */
  scaleSets: ScaleSetPolicies;
  counters: BackendCounters;
  newName: () => string;
  /** 412s in a row before a round gives up (the fulfiller backs off). */
  preconditionRetries: number;
  /** Drops all this process knows of the node. */
  forget: (node: string) => void;
  /** ARM refused IPv6 ipConfigurations on a NIC: the backend serves IPv4 alone from now on. */
  ipv6Refused?: (node: NodeRef, message: string) => void;
}

/** One round's change of the node's IPv4 pod addresses on its NIC (one family: backend.ts). */
export type NicChange = Omit<FamilyChange, 'family'>;

/** What the NIC holds after the round, as the fulfiller's ApplyResult has it for one family. */
export interface NicResult {
  held: HeldContainer;
  short: boolean;
  lost?: string[];
}

/** One family's part of a round. */
interface FamilyRound {
  change: FamilyChange;
  family: IpFamily;
  pod: PodSubnet;
  subnet: PodSubnetFacts;
  remove: string[];
  known: string[];
  fix: Restoration;
  /** New addresses asked (cut after a SubnetIsFull of this family). */
  add: number;
  short: boolean;
}

/** One round's state across its PUTs (a refusal may lead to another). */
interface RoundState {
  node: NodeRef;
  found: FoundNic;
  /** Restorations keep their names (not on a scale set's NIC: restore.ts). */
  named: boolean;
  fams: FamilyRound[];
  /** The NIC as last read or written. */
  nic: NetworkInterface;
  /** 412s (and superseded operations) so far. */
  preconditions: number;
  /** SubnetIsFull answers so far (a virtual network's cap counts for two). */
  fulls: number;
}

export class NicRounds {
  private readonly directory: NicDirectory;
  private readonly podSubnets: PodSubnets;
  private readonly nics: NodeNics;
  private readonly audit: RemovalAudit;
  private readonly scaleSets: ScaleSetPolicies;
  private readonly counters: BackendCounters;
  private readonly newName: () => string;
  private readonly preconditionRetries: number;
  private readonly forget: (node: string) => void;
  private readonly ipv6Refused: ((node: NodeRef, message: string) => void) | undefined;

  constructor(options: NicRoundsOptions) {
    this.directory = options.directory;
    this.podSubnets = options.podSubnets;
    this.nics = options.nics;
    this.audit = options.audit;
    this.scaleSets = options.scaleSets;
    this.counters = options.counters;
    this.newName = options.newName;
    this.preconditionRetries = options.preconditionRetries;
    this.forget = options.forget;
    this.ipv6Refused = options.ipv6Refused;
  }

  /** One round; a failure after a write may have landed leaves the node in doubt. */
  async apply(node: NodeRef, change: PoolChange): Promise<ApplyResult> {
    try {
      const result = await this.round(node, change);
      this.nics.trust(node.name);
      return result;
    } catch (err) {
      // ARM refused the identity (a missing role assignment): the node says
      // why (a Warning Event) instead of a bare retry. A refused poll comes
      // after the write was accepted: the NIC is read afresh next time.
      if (armErrorKind(err) === 'forbidden') {
        this.nics.distrust(node.name);
        throw new NodeSetupError(
          'ArmForbidden',
          `node ${node.name}: ARM refused (403, check the role assignments): ${(err as Error).message}`,
        );
      }
      // A write may have landed whose answer never came: read the NIC afresh next time.
      if (!(err instanceof NodeSetupError || err instanceof SubnetFullError)) {
        this.nics.distrust(node.name);
      }
      throw err;
    }
  }

  /** Each family's part: its subnet figures read (a family the subnet lacks: NodeSetupError). */
  private async families(change: PoolChange, podSubnetId: string, named: boolean) {
    // The subnet's prefixes first: a family it lacks gets no figures of its own.
    const offered = (await this.podSubnets.of(podSubnetId).get()).families ?? [4];
    const out: FamilyRound[] = [];
    for (const f of change.families) {
      if (!offered.includes(f.family)) {
        throw new NodeSetupError(
          `NoIPv${f.family}Prefix`,
          `pod subnet ${podSubnetId.split('/').pop()} has no IPv${f.family} address prefix`,
        );
      }
      const pod = this.podSubnets.of(podSubnetId, f.family);
      const subnet = await pod.get();
      await pod.refreshIfStale().catch((e: unknown) => this.podSubnets.readFailed('usage', e));
      out.push({
        change: f,
        family: f.family,
        pod,
        subnet,
        remove: f.remove.map((r) => r.name),
        known: (f.container?.ipAssignments ?? []).map((a) => a.name),
        fix: new Restoration([], named),
        add: f.add,
        short: false,
      });
    }
    return out;
  }

  /**
   * Plan, PUT, and on a refusal that leaves something to try (a 412, a
   * restoration refused, a SubnetIsFull) plan again from what is known now.
   */
  private async round(node: NodeRef, change: PoolChange): Promise<ApplyResult> {
    const r = await this.begin(node, change);
    for (;;) {
      const plan = this.plan(r);
      if (!plan.changed) {
        const lost = r.fams.flatMap((s) => s.fix.lost);
        this.audit.settled(node, r.nic, [], lost);
        return this.finish(r, r.nic);
      }
      try {
        return await this.write(r, plan);
      } catch (err) {
        const answer = await this.refused(r, plan, err);
        if (answer) return answer;
      }
    }
  }

  /** The node's NIC and each family's part, before any write. */
  private async begin(node: NodeRef, change: PoolChange): Promise<RoundState> {
    if (change.families.length === 0) throw new Error(`node ${node.name}: a round of no family`);
    const found = await this.directory.lookup(node);
    // Before any write: a scale set whose upgrades would take the addresses away refuses.
    if (found.ref.kind === 'scale-set') await this.scaleSets.check(node, found.ref);
    // Another writer's removals: put back with their addresses, or lost and
    // replaced in the same write (restore.ts).
    const named = found.ref.kind !== 'scale-set';
    const fams = await this.families(change, found.podSubnetId, named);
    const nic = await this.nics.roundNic(node, found, this.audit.isDisturbed(node.name));
    return { node, found, named, fams, nic, preconditions: 0, fulls: 0 };
  }

  /**
   * The NIC as read now (after a 412 too) with what it lacks of the NNC, in
   * one plan; a cap that leaves no room, or no room for an NC primary, refuses.
   */
  private plan(r: RoundState): NicFamiliesPlan {
    const { node, fams } = r;
    for (const s of fams) {
      s.fix.update(missingConfigs(r.nic, s.change.container, s.remove, s.family), r.named);
    }
    const limits = fams.map((s) => limitOf(s.pod, r.fulls));
    const plan = planNicFamilies({
      nic: r.nic,
      podSubnetId: r.found.podSubnetId,
      newName: this.newName,
      otherConfigs: r.found.otherConfigs,
      families: fams.map((s, i) => ({
        family: s.family,
        add: s.add + s.fix.replacements,
        remove: s.remove,
        known: s.known,
        ...(limits[i] !== undefined ? { limit: limits[i] } : {}),
        ...(s.fix.restore.length > 0 ? { restore: s.fix.restore } : {}),
      })),
    });
    fams.forEach((s, i) => {
      if (plan.families[i]!.limited) s.short = true;
    });
    const addedAny = plan.families.some((p) => p.added.length > 0);
    if (plan.cap && !addedAny && !plan.changed) this.capReached(node, r.nic, plan.cap);
    fams.forEach((s, i) => {
      const limit = limits[i];
      if (plan.families[i]!.createsPrimary && limit !== undefined && limit < 1) {
        throw noRoomForPrimary(s, node);
      }
    });
    return plan;
  }

  /** The plan's one PUT; once ARM has it, counted, settled and answered. */
  private async write(r: RoundState, plan: NicFamiliesPlan): Promise<ApplyResult> {
    const restored = r.fams.flatMap((s) => s.fix.restore);
    const lost = r.fams.flatMap((s) => s.fix.lost);
    const written = await this.nics.put(r.node, r.found.ref, plan.nic, r.nic.etag);
    this.nics.keep(r.node, written);
    r.fams.forEach((s, i) => {
      const p = plan.families[i]!;
      const taken = p.added.length + (p.createsPrimary ? 1 : 0) + p.restored.length;
      this.counters.count(s.pod, taken, p.removed.length);
    });
    this.audit.settled(r.node, written, restored, lost);
    return this.finish(r, written);
  }

  /**
   * A refused PUT: undefined to plan again, the round's answer when the
   * subnet left nothing more to try, or the error the node is told.
   */
  private async refused(
    r: RoundState,
    plan: NicFamiliesPlan,
    err: unknown,
  ): Promise<ApplyResult | undefined> {
    const kind = armErrorKind(err);
    // A restored address ARM has given to another NIC: lost; the rest tried again.
    if (refusedIn(r.fams, err)) return undefined;
    if (kind === 'not-found') this.notFound(r.node, r.found.ref, err);
    const v6 = r.fams.findIndex((f) => f.family === 6);
    if (v6 >= 0 && refusesIpv6(err, kind, plan.families[v6]!)) {
      this.refuseIpv6(r.node, r.nic, err);
    }
    if (kind === 'limit') this.capReached(r.node, r.nic, limitOfError(err));
    const reread = kind === 'precondition-failed' || kind === 'superseded';
    if (reread && r.preconditions++ < this.preconditionRetries) {
      if (kind === 'superseded') this.counters.superseded();
      else this.counters.preconditionFailed();
      r.nic = await this.nics.reread(r.node, r.found.ref);
      return undefined;
    }
    if (kind !== 'subnet-full' && kind !== 'vnet-full') throw err;
    return this.subnetFull(r, plan, err, kind === 'vnet-full');
  }

  /**
   * A SubnetIsFull (or the virtual network's cap): the families it is about
   * marked full, their usage and the NIC read afresh; undefined to try again
   * with what still fits, then with nothing new; after the third, the answer.
   */
  private async subnetFull(
    r: RoundState,
    plan: NicFamiliesPlan,
    err: unknown,
    vnet: boolean,
  ): Promise<ApplyResult | undefined> {
    this.counters.subnetFull();
    const full = fullFamilies(r.fams, plan, err);
    for (const { s } of full) {
      s.pod.markFull();
      s.short = true;
    }
    r.fulls++;
    // The virtual network's cap: no address anywhere in it, nothing new this round.
    if (vnet) {
      this.counters.limitReached('vnet');
      r.fulls = Math.max(r.fulls, 2);
    }
    // A read sent after this refusal, not one in flight from before it.
    for (const { s } of full) {
      await s.pod.refreshAfter().catch((e: unknown) => this.podSubnets.readFailed('usage', e));
    }
    r.nic = await this.nics.reread(r.node, r.found.ref);
    for (const { s, p } of full) {
      // Undefined: the usage is unknown (its read refused, or an IPv6 prefix); the answer alone must do.
      const free = s.pod.free;
      if (p.createsPrimary && ((free !== undefined && free < 1) || r.fulls >= 3)) {
        throw noRoomForPrimary(s, r.node);
      }
    }
    if (r.fulls >= 3) return this.finish(r, r.nic);
    cutAdditions(full, r.fulls);
    return undefined;
  }

  /**
   * The round's answer from the NIC as written (or as read): what it holds
   * of each family, and the addresses the status lists that are proven gone
   * (lost, reported with an Event by the audit): the fulfiller may drop just
   * those (ApplyResult.lost).
   */
  private finish(r: RoundState, at: NetworkInterface): ApplyResult {
    const held = r.fams.map((s) => heldOn(r.node, at, s.subnet, r.found.nodeIP));
    const short = r.fams.some((s) => s.short);
    const ips = r.fams.flatMap((s) => s.fix.lost).map((l) => l.ip);
    return { held, short, ...(ips.length > 0 ? { lost: ips } : {}) };
  }

  private notFound(node: NodeRef, ref: NicRef, err: unknown): never {
    this.forget(node.name);
    this.directory.drop(node);
    throw new NodeSetupError(
      'NicNotFound',
      `node ${node.name}: NIC ${nicLabel(ref)} is gone (${(err as Error).message})`,
    );
  }

  /**
   * ARM refused the IPv6 ipConfigurations a round adds (Azure documents one
   * private IPv6 address per NIC): the backend serves IPv4 alone from now on
   * (backend.ts), so IPv4 pod addresses go on; this node says why and is
   * retried, IPv4 alone.
   */
  private refuseIpv6(node: NodeRef, nic: NetworkInterface, err: unknown): never {
    this.counters.limitReached('ipv6');
    const message =
      `ARM refused IPv6 ipConfigurations on NIC ${nic.name} (${(err as Error).message}); ` +
      `Azure documents one private IPv6 address per NIC: the pod subnet's IPv6 prefix is not ` +
      `served until the fulfiller restarts, IPv4 goes on`;
    this.ipv6Refused?.(node, message);
    throw new NodeSetupError('IPv6Refused', `node ${node.name}: ${message}`);
  }

  /** A cap leaves no room for one more address: say so on the node, count it, no write. */
  private capReached(node: NodeRef, nic: NetworkInterface, cap: 'nic' | 'vm'): never {
    this.counters.limitReached(cap);
    const what =
      cap === 'nic'
        ? `NIC ${nic.name} holds ${nic.ipConfigurations?.length ?? 0} ipConfigurations, Azure's limit per NIC is 256`
        : `its VM's NICs hold 256 private IP addresses, Azure's limit per VM`;
    throw new NodeSetupError(
      'IpConfigurationLimit',
      `node ${node.name}: no more pod IPs fit: ${what}`,
    );
  }
}

/** What the NIC holds of one family (an error while it has no NC primary of it). */
function heldOn(node: NodeRef, nic: NetworkInterface, subnet: PodSubnetFacts, nodeIP?: string) {
  const held = heldContainer(nic, subnet, nodeIP);
  if (!held) {
    throw new Error(
      `node ${node.name}: NIC ${nic.name} has no IPv${subnet.family ?? 4} NC primary address yet`,
    );
  }
  return held;
}

/** No free address in the family's subnet for the node's NC primary IP. */
function noRoomForPrimary(s: FamilyRound, node: NodeRef): SubnetFullError {
  return new SubnetFullError(
    `pod subnet ${s.subnet.name} has no free address for node ${node.name}'s NC primary IP`,
  );
}

/**
 * The families a SubnetIsFull is about, with their plans: the one whose
 * prefix ARM names; when it names none, every family that was adding.
 */
function fullFamilies(fams: FamilyRound[], plan: NicFamiliesPlan, err: unknown) {
  const which = fullFamily(err);
  return fams
    .map((s, i) => ({ s, p: plan.families[i]! }))
    .filter(({ s, p }) =>
      which !== undefined
        ? s.family === which
        : p.added.length > 0 || p.createsPrimary || p.restored.length > 0,
    );
}

/**
 * The full families' next request: after the first SubnetIsFull what still
 * fits (fewer than the first; half of it when the usage is unknown), after
 * the second nothing new.
 */
function cutAdditions(full: { s: FamilyRound; p: FamilyPlan }[], fulls: number): void {
  for (const { s, p } of full) {
    const free = s.pod.free;
    const fits =
      free === undefined ? Math.floor(p.added.length / 2) : free - (p.createsPrimary ? 1 : 0);
    const fresh = fulls === 1 ? Math.min(p.added.length - 1, fits) : 0;
    s.add = p.adopted.length + Math.max(0, fresh);
  }
}

/**
 * The most a family may take now: while its subnet is known full, no more
 * than it has free (a node asking again costs no failing PUT); free count
 * unknown: this round's own retries ask what they computed, other rounds
 * nothing. Undefined: no limit.
 */
function limitOf(pod: PodSubnet, fulls: number): number | undefined {
  const free = pod.free;
  if (pod.lifted) return free;
  if (!pod.full) return undefined;
  if (free !== undefined) return free;
  return fulls > 0 ? undefined : 0;
}

/** Which cap an ARM limit answer is: the VM's or the NIC's. */
function limitOfError(err: unknown): 'nic' | 'vm' {
  return /Machine/.test((err as { code?: string }).code ?? '') ? 'vm' : 'nic';
}

/**
 * ARM refused the IPv6 ipConfigurations the plan adds or puts back: its
 * limit code for them (the emulator's: ARM's is not public), or any other
 * 400 ARM gives no known meaning whose message speaks of IPv6. A
 * SubnetIsFull, a limit of the NIC or VM, a Static refusal are not.
 */
function refusesIpv6(err: unknown, kind: string, v6: FamilyPlan): boolean {
  const e = err as { statusCode?: number; code?: string; message?: string };
  const adds = v6.added.length > 0 || v6.createsPrimary || v6.restored.length > 0;
  if (!adds) return false;
  if (kind === 'limit') return /IPv6/i.test(e.code ?? '');
  return kind === 'other' && e.statusCode === 400 && /IPv6/i.test(`${e.code} ${e.message}`);
}

/**
 * The family of the prefix a SubnetIsFull names ("Subnet X with address
 * prefix P does not have enough capacity for N IP addresses."); undefined
 * when it names none.
 */
function fullFamily(err: unknown): IpFamily | undefined {
  const message = (err as { message?: unknown }).message;
  const prefix = /address prefix (\S+?)[\s.,]*(?:does|$)/.exec(
    typeof message === 'string' ? message : '',
  )?.[1];
  return cidrFamily(prefix);
}

/**
 * A PUT refused for a Static address (restore.ts): the family whose
 * restorations hold the address it names drops it; when it names none of
 * them, every family with restorations drops them all. True: try again.
 */
function refusedIn(fams: FamilyRound[], err: unknown): boolean {
  const refusal = restoreRefusal(err);
  if (!refusal) return false;
  const restoring = fams.filter((s) => s.fix.restore.length > 0);
  const owner = restoring.find((s) => s.fix.restore.some((r) => sameIp(r.ip, refusal.ip)));
  let retried = false;
  for (const s of owner ? [owner] : restoring) retried = s.fix.refused(err) || retried;
  return retried;
}
