// A Uniform scale set's upgrade policy, and whether its instances may be
// given pod addresses (docs/design/fulfiller.md, "Scale sets").
//
// A Uniform instance's pod ipConfigurations live only in that instance's own
// model (nic-api.ts writes them there): upgrading the instance to the scale
// set's latest model resets its network profile to the scale set's and ARM
// frees their addresses at once, while its pods still use them. With
// upgradePolicy.mode Automatic or Rolling that happens to every instance on
// any change of the scale set's model, with nobody choosing it (Azure docs,
// "Upgrade policy modes for Virtual Machine Scale Sets"): the nodes of such a
// scale set are refused (a Warning Event, no write) until its mode is Manual,
// and the refusal is re-read with the NIC list (at most once a minute). With
// Manual, only a deliberate upgrade (the manualUpgrade action, a node-image
// upgrade, a reimage) does it, which drains the node first: served, with a
// warning in the log once per scale set, and any loss found afterwards is
// reported (removal-audit.ts). A mode that cannot be read refuses too (fail
// closed); a 403 reading it is the round's ArmForbidden.
import type { Logger } from '../log/logger.ts';
import type { NicRef } from './nic-api.ts';
import type { BackendCounters } from './stats.ts';
import type { NodeRef } from '../fulfiller/backend.ts';
import { NodeSetupError } from '../fulfiller/backend.ts';

export interface ScaleSetPoliciesOptions {
  /** The scale set's upgradePolicy.mode as ARM returns it (undefined: none given). */
  read: (resourceGroup: string, scaleSet: string) => Promise<string | undefined>;
  counters: BackendCounters;
  now: () => number;
  /** A mode is read again when this old (default 60 s, the NIC list's pace). */
  maxAgeMs?: number;
  logger?: Logger;
}

type ScaleSetRef = Extract<NicRef, { kind: 'scale-set' }>;

/** Whether instances of a scale set with this upgrade mode may hold pod addresses. Pure. */
export function upgradeModeVerdict(mode: string | undefined): 'serve' | 'refuse' {
  return mode?.toLowerCase() === 'manual' ? 'serve' : 'refuse';
}

export class ScaleSetPolicies {
  private readonly options: ScaleSetPoliciesOptions;
  private readonly maxAgeMs: number;
  /** Per scale set: its mode as last read, and when. */
  private readonly modes = new Map<string, { mode: string | undefined; at: number }>();

  constructor(options: ScaleSetPoliciesOptions) {
    this.options = options;
    this.maxAgeMs = options.maxAgeMs ?? 60_000;
  }

  /**
   * Resolves when the node's scale set lets its instances hold pod
   * addresses; throws NodeSetupError (ScaleSetUpgradePolicy, waiting for a
   * change) when its upgrade mode would take them away. ARM errors propagate.
   */
  async check(node: NodeRef, ref: ScaleSetRef): Promise<void> {
    const mode = await this.modeOf(ref);
    if (upgradeModeVerdict(mode) === 'serve') return;
    throw new NodeSetupError(
      'ScaleSetUpgradePolicy',
      `node ${node.name}: scale set ${ref.scaleSet} has upgradePolicy.mode ${mode ?? '(none)'}: ` +
        `any change of its model upgrades every instance to it, which removes the pod ` +
        `ipConfigurations written into the instance and frees their addresses under running ` +
        `pods; no pod addresses are given to its instances until the mode is Manual`,
      { waitsForChange: true },
    );
  }

  private async modeOf(ref: ScaleSetRef): Promise<string | undefined> {
    const key = `${ref.resourceGroup}/${ref.scaleSet}`.toLowerCase();
    const known = this.modes.get(key);
    const now = this.options.now();
    if (known && now - known.at < this.maxAgeMs) return known.mode;
    const mode = await this.options.read(ref.resourceGroup, ref.scaleSet);
    this.modes.set(key, { mode, at: now });
    if (known?.mode !== mode || !known) this.announce(ref.scaleSet, mode);
    return mode;
  }

  /** Says once per scale set (and again on a change) what its mode means. */
  private announce(scaleSet: string, mode: string | undefined): void {
    this.options.counters.scaleSetModes([...this.modes.values()].map((m) => m.mode ?? 'unknown'));
    const fields = { scaleSet, upgradeMode: mode ?? 'unknown' };
    if (upgradeModeVerdict(mode) === 'refuse') {
      this.options.logger?.error(
        'scale set refused: its upgrade policy would remove pod addresses under running pods',
        fields,
      );
      return;
    }
    this.options.logger?.warn(
      'scale set served: upgrading an instance to the latest model (manual upgrade, node-image upgrade, reimage) removes its pod addresses; drain the node first',
      fields,
    );
  }
}
