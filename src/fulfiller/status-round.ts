// A status round for one node: ask the backend for ONE write (add and
// release together), then write the status it leads to through the gate
// (status-write.ts), re-reading and recomputing on a conflict. A write in
// doubt is settled first: the round reads the NNC afresh, which settles it
// when the NNC moved on, or, once the request timeout is over, when it has
// not. What the round asks of the term (the CSS) goes into its SyncAsks.
import { isNotFound } from '../kube/errors.ts';
import type { NetworkContainer, NodeNetworkConfig } from '../nnc/types.ts';
import { dynamicContainers } from '../nnc/types.ts';
import { NodeSetupError, SubnetFullError } from './backend.ts';
import { addressesOf } from './address-index.ts';
import { nextSeq } from './node-book.ts';
import type { RecordView } from './node-record.ts';
import { nodeRef } from './nodes.ts';
import type { NodePlan } from './plan.ts';
import { containerFrom, STATUS_SUBNET_FULL } from './status.ts';
import { writeThroughGate } from './status-write.ts';
import { ConflictLoopError, planFor, scalerFor, subnetsChanged, warn } from './sync-context.ts';
import type { SyncAsks, SyncContext, SyncOutcome } from './sync-context.ts';

/** Whether a status round must call the backend; false when only the status may change. */
export function needsBackend(ctx: SyncContext, record: RecordView, plan: NodePlan): boolean {
  const served = plan.families.filter((f) => f.served);
  if (served.some((f) => !f.container) || plan.release.length > 0) return true;
  const containers = served.map((f) => f.container!);
  if (ctx.backend.needsRound?.(nodeRef(record.name, record.nodeInfo()), containers)) return true;
  if (plan.allocate === 0) return false;
  // Waiting for a free address: ask the backend again only once a short family's subnet has one.
  if (record.nnc()?.status?.status !== STATUS_SUBNET_FULL) return true;
  const subnets = ctx.backend.subnets();
  return served.some((f) => {
    if (f.allocate === 0) return false;
    const subnet = subnets.find((s) => s.name === f.container?.subnetName);
    return subnet === undefined || subnet.free > 0;
  });
}

/** The containers when the backend is not called: the same ones, the current nodeIP. */
export function containersWithoutBackend(
  ctx: SyncContext,
  record: RecordView,
  plan: NodePlan,
): NetworkContainer[] {
  const internalIP = record.nodeInfo()?.internalIP;
  return plan.families.flatMap(({ container: nc, served }) => {
    if (!nc) return [];
    if (!served) return [nc];
    return [
      containerFrom({
        held: {
          primaryIP: nc.primaryIP ?? '',
          subnetName: nc.subnetName ?? '',
          subnetAddressSpace: nc.subnetAddressSpace ?? '',
          defaultGateway: nc.defaultGateway ?? '',
          type: nc.type ?? 'vnet',
          ipAssignments: [...(nc.ipAssignments ?? [])],
        },
        existing: nc,
        newId: ctx.newId,
        ...(internalIP ? { nodeIP: internalIP } : {}),
      }),
    ];
  });
}

/** Reads the NNC afresh (after a conflict, or a write in doubt): the answer goes into the book. */
export async function reread(
  ctx: SyncContext,
  record: RecordView,
): Promise<NodeNetworkConfig | undefined> {
  const sent = nextSeq();
  const sentAt = ctx.now();
  let fresh: NodeNetworkConfig | undefined;
  try {
    fresh = await ctx.nncApi.get(record.name);
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
  ctx.book.answered('nnc', record.name, fresh, sent);
  const now = record.nnc();
  if (now) ctx.book.settleUnanswered(record, now.metadata.resourceVersion, sentAt);
  return now;
}

export async function serveStatus(
  ctx: SyncContext,
  record: RecordView,
  asks: SyncAsks,
): Promise<SyncOutcome> {
  let nnc = record.nnc();
  if (nnc && record.doubts.length > 0) {
    // A write in doubt: read afresh, which settles it when the NNC moved on,
    // or when it has not and the request timeout is over.
    const held = record.holdings().size;
    nnc = await reread(ctx, record);
    if (record.holdings().size < held) subnetsChanged(asks, true);
  }
  for (let attempt = 0; attempt < ctx.config.conflictRetries && nnc; attempt++) {
    const result = await statusRound(ctx, record, nnc, asks);
    if (result !== 'conflict') return result;
    nnc = await reread(ctx, record);
  }
  if (!nnc) return 'noop';
  throw new ConflictLoopError(`status of ${record.name} kept conflicting`);
}

export async function statusRound(
  ctx: SyncContext,
  record: RecordView,
  nnc: NodeNetworkConfig,
  asks: SyncAsks,
): Promise<SyncOutcome | 'conflict'> {
  const name = nnc.metadata.name;
  const seen = record.nncSeen();
  const plan = planFor(ctx, record, nnc);
  if (plan.invalid) {
    if (record.verdicts.invalid !== plan.invalid) {
      ctx.book.verdict(record, { invalid: plan.invalid });
      ctx.log.warn('rejected NodeNetworkConfig', {
        node: name,
        kind: 'NodeNetworkConfig',
        namespace: nnc.metadata.namespace,
        name,
        resourceVersion: nnc.metadata.resourceVersion,
        field: plan.invalidField,
        error: plan.invalid,
      });
      warn(
        ctx,
        nnc,
        plan.invalidField?.startsWith('status') ? 'InvalidStatus' : 'InvalidSpec',
        plan.invalid,
      );
    }
    return 'invalid';
  }
  ctx.book.verdict(record, { invalid: undefined });
  const scaler = scalerFor(ctx, record);
  if (!needsBackend(ctx, record, plan)) {
    const written = await writeThroughGate(ctx, record, nnc, seen, {
      containers: containersWithoutBackend(ctx, record, plan),
      requested: plan.requested,
      short: nnc.status?.status === STATUS_SUBNET_FULL && plan.allocate > 0,
      scaler,
    });
    return written.kind === 'conflict'
      ? 'conflict'
      : written.kind === 'written'
        ? 'written'
        : 'noop';
  }
  return backendRound(ctx, record, nnc, seen, plan, asks);
}

async function backendRound(
  ctx: SyncContext,
  record: RecordView,
  nnc: NodeNetworkConfig,
  seen: number,
  planned: NodePlan,
  asks: SyncAsks,
): Promise<SyncOutcome | 'conflict'> {
  const name = nnc.metadata.name;
  let plan = planned;
  // A new address (or a first container) may be one a previous leader's late
  // write puts on another NNC, or one a view that misses changes does not
  // show: it waits; releases go on (docs/decisions/0022).
  const served = plan.families.filter((f) => f.served);
  const settingUp = served.some((f) => !f.container);
  const why = plan.allocate > 0 || settingUp ? ctx.allocationWait(record) : undefined;
  ctx.book.wait(record, why);
  if (why !== undefined) {
    if (settingUp || plan.release.length === 0) return 'waiting';
    plan = { ...plan, allocate: 0, families: plan.families.map((f) => ({ ...f, allocate: 0 })) };
  }
  const node = record.nodeInfo();
  const scaler = scalerFor(ctx, record);
  ctx.guard();
  let result;
  try {
    result = await ctx.backend.apply(nodeRef(name, node), {
      families: served.map((f) => ({
        family: f.family,
        ...(f.container ? { container: f.container } : {}),
        add: plan.families.find((p) => p.family === f.family)!.allocate,
        remove: f.release.map((a) => ({ name: a.name, ip: a.ip })),
      })),
      hold: (ips) => ctx.book.reserve(record, ips),
    });
  } catch (err) {
    if (err instanceof SubnetFullError)
      return writeSubnetFull(ctx, record, nnc, seen, err.message, asks);
    if (err instanceof NodeSetupError && isNewVerdict(ctx, record, err)) {
      ctx.log.warn('node cannot be set up', { node: name, reason: err.reason, error: err.message });
      warn(ctx, nnc, err.reason, err.message);
    }
    throw err;
  }
  ctx.book.verdict(record, { setup: undefined });
  const before = addressesOf(served.flatMap((f) => (f.container ? [f.container] : [])));
  const heldNow = addressesOf(result.held.map((h) => ({ id: '', ...h })));
  const fresh = [...heldNow].filter((ip) => !before.has(ip));
  // What the node let go (and the backend freed), or the backend proves gone, may leave its status.
  const mayDrop = new Set<string>([
    ...plan.release.map((a) => a.ip).filter((ip) => !heldNow.has(ip)),
    ...(result.lost ?? []),
  ]);
  const containers = served.map((f, i) =>
    containerFrom({
      held: result.held[i]!,
      ...(f.container ? { existing: f.container } : {}),
      newId: ctx.newId,
      ...(node?.internalIP ? { nodeIP: node.internalIP } : {}),
    }),
  );
  // A container of a family the backend does not serve stays as it is.
  const carried = plan.families.flatMap((f) => (!f.served && f.container ? [f.container] : []));
  let written;
  try {
    written = await writeThroughGate(ctx, record, nnc, seen, {
      containers: [...containers, ...carried],
      requested: plan.requested,
      short: result.short,
      scaler,
      mayDrop,
    });
  } finally {
    // The backend's picks (the CIDR backend's) are the answer's now, in doubt, or in no status.
    ctx.book.unreserve(record, fresh);
  }
  if (written.kind === 'conflict') return 'conflict';
  if (written.kind !== 'written') return written.kind === 'waiting' ? 'waiting' : 'noop';
  const kept = new Set(
    served.flatMap((f) => (f.container?.ipAssignments ?? []).map((a) => a.name)),
  );
  const status = written.nnc.status;
  const ids = new Set(containers.map((nc) => nc.id));
  const newIps = (status?.networkContainers ?? [])
    .filter((nc) => ids.has(nc.id))
    .flatMap((nc) => nc.ipAssignments ?? [])
    .filter((a) => !kept.has(a.name)).length;
  ctx.counters.allocated += newIps;
  ctx.counters.released += plan.release.length;
  ctx.metrics?.allocated(newIps);
  ctx.metrics?.released(plan.release.length);
  ctx.log.info('node status written', {
    node: name,
    requested: plan.requested,
    assigned: status?.assignedIPCount,
    allocated: newIps,
    released: plan.release.length,
    status: status?.status,
  });
  if (result.short && nnc.status?.status !== STATUS_SUBNET_FULL) {
    warn(
      ctx,
      written.nnc,
      'SubnetFull',
      `allocated ${newIps} of ${plan.allocate * containers.length} requested IPs: subnet ${containers.map((nc) => nc.subnetName).join(', ')} is full`,
    );
  }
  subnetsChanged(asks, plan.release.length > 0 || (result.lost?.length ?? 0) > 0);
  return 'written';
}

/** No container can be set up: say so in the status, and wait for addresses to free up. */
async function writeSubnetFull(
  ctx: SyncContext,
  record: RecordView,
  nnc: NodeNetworkConfig,
  seen: number,
  reason: string,
  asks: SyncAsks,
): Promise<SyncOutcome | 'conflict'> {
  // The backend just learnt its subnet is full (Azure: SubnetIsFull): the CSS says so.
  subnetsChanged(asks, false);
  const written = await writeThroughGate(ctx, record, nnc, seen, {
    containers: dynamicContainers(nnc),
    requested: planFor(ctx, record, nnc).requested,
    short: true,
    scaler: scalerFor(ctx, record),
  });
  if (written.kind === 'conflict') return 'conflict';
  if (written.kind !== 'written') return 'noop';
  ctx.log.warn('node waits for a free subnet address', { node: nnc.metadata.name, error: reason });
  warn(ctx, nnc, 'SubnetFull', reason);
  return 'written';
}

/**
 * A verdict that waits for a change is reported (log line and Warning Event)
 * once while it stays the same; any other setup failure every time.
 */
function isNewVerdict(ctx: SyncContext, record: RecordView, err: NodeSetupError): boolean {
  if (!err.waitsForChange) return true;
  const said = `${err.reason}: ${err.message}`;
  if (record.verdicts.setup === said) return false;
  ctx.book.verdict(record, { setup: said });
  return true;
}
