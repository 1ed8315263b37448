// The monitor's pure reducer: folds every input (a watch, the tick, a
// wake-up, a reconcile's outcome fed back) into the one state. No I/O and no
// clock: each input carries its time, and what should be logged or reported
// comes out as notices on the new state.
import { poolSize } from '../nnc/family.ts';
import { invalidNnc, type NodeNetworkConfig } from '../nnc/types.ts';
import { normaliseScaler } from '../scaling/scaler.ts';
import { calculateTarget } from '../scaling/target.ts';
import { backedIds, malformedSpecField, normaliseRequest, observedSpec } from './spec.ts';
import {
  effectiveScaler,
  isReady,
  type MonitorInput,
  type MonitorState,
  type Notice,
  type Ran,
} from './state.ts';
import type { MonitorEvent, ReconcileOutcome } from './types.ts';

export function reduce(prev: MonitorState, input: MonitorInput): MonitorState {
  const s: MonitorState = { ...prev, notices: [] };
  switch (input.type) {
    case 'demand':
      return observed(onDemand(s, input.value), input.at);
    case 'exhausted':
      return observed(onExhausted(s, input.value), input.at);
    case 'nnc':
      return observed(onNnc(s, input.nnc, input.at), input.at);
    case 'input-failed':
      // The last state stays; the tick keeps reconciling with it.
      return note(
        s,
        'error',
        'input failed',
        { input: input.input, error: input.error },
        {
          type: 'input-failed',
          input: input.input,
          error: input.error,
        },
      );
    case 'tick':
    case 'store':
      return wantReconcile(s);
    case 'wake':
      if (input.reason === 'retry') s.retryAt = undefined;
      if (input.reason === 'write-window') s.heldUntil = undefined;
      return wantReconcile(s);
    case 'reconciled':
      return onReconciled(s, input.outcome, input.ran);
  }
}

function note(
  s: MonitorState,
  level: Notice['level'],
  msg: string | undefined,
  fields?: Record<string, unknown>,
  event?: MonitorEvent,
): MonitorState {
  s.notices = [
    ...s.notices,
    {
      level,
      ...(msg !== undefined ? { msg } : {}),
      ...(fields ? { fields } : {}),
      ...(event ? { event } : {}),
    },
  ];
  return s;
}

function wantReconcile(s: MonitorState): MonitorState {
  s.wanted += 1;
  return s;
}

/** Recomputes the target and feeds the policy's memory. */
function observed(s: MonitorState, at: number): MonitorState {
  if (!isReady(s)) return s;
  const demand = s.demand ?? 0;
  const target = calculateTarget(demand, effectiveScaler(s));
  s.target = target;
  const nnc = s.nnc;
  const observation = {
    at,
    demand,
    target,
    ...(nnc !== undefined
      ? {
          allocated: nnc.allocated,
          // What the spec asks of the control plane (the policy's idle account follows its rounds).
          ...(nnc.observed.spec.requestedIPCount >= 0
            ? { requested: nnc.observed.spec.requestedIPCount }
            : {}),
          releasing: nnc.observed.spec.ipsNotInUse.length - nnc.stale.length,
        }
      : {}),
  };
  s.policyMemory = s.config.policy.observe(s.policyMemory, observation);
  s.observation = observation;
  return s;
}

function invalidInput(
  s: MonitorState,
  input: 'demand' | 'exhausted',
  msg: string,
  value: unknown,
): MonitorState {
  return note(s, 'warn', msg, { value: String(value) }, { type: 'input-invalid', input, value });
}

function onDemand(s: MonitorState, value: unknown): MonitorState {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    return invalidInput(s, 'demand', 'ignoring invalid demand', value);
  }
  s.demand = Math.floor(value);
  return wantReconcile(note(s, 'info', 'demand update', { demand: s.demand }));
}

function onExhausted(s: MonitorState, value: unknown): MonitorState {
  if (typeof value !== 'boolean') {
    return invalidInput(s, 'exhausted', 'ignoring invalid exhaustion state', value);
  }
  s.exhausted = value;
  return wantReconcile(note(s, 'info', 'exhaustion update', { exhausted: value }));
}

/** Which NNC a log line is about. */
function aboutNnc(nnc: NodeNetworkConfig): Record<string, unknown> {
  return {
    kind: 'NodeNetworkConfig',
    namespace: nnc?.metadata?.namespace,
    name: nnc?.metadata?.name,
    resourceVersion: nnc?.metadata?.resourceVersion,
  };
}

function onNnc(s: MonitorState, nnc: NodeNetworkConfig, at: number): MonitorState {
  const invalid = invalidNnc(nnc);
  if (invalid !== undefined) {
    const reason = invalid.reason;
    return note(
      s,
      'warn',
      'ignoring NodeNetworkConfig',
      { reason, field: invalid.field, ...aboutNnc(nnc) },
      { type: 'nnc-invalid', reason },
    );
  }
  const { scaler, warnings } = normaliseScaler(nnc.status?.scaler);
  const generation = nnc.metadata?.generation;
  const uid = typeof nnc.metadata?.uid === 'string' ? nnc.metadata.uid : undefined;
  const first = s.nnc === undefined;
  // The NNC's identity is its uid: a new one (deleted and recreated) says
  // nothing about what was written to the old one.
  const recreated = !first && uid !== undefined && s.nnc?.uid !== undefined && uid !== s.nnc.uid;
  // Ids the observed spec gives back that the status no longer backs: a write
  // only to drop them may wait for the next one (PoolPolicy.staleClearMs).
  const backed = backedIds(nnc);
  const backedSet = new Set(backed);
  const stale = observedSpec(nnc).ipsNotInUse.filter((id) => !backedSet.has(id));
  const staleSince = stale.length === 0 ? undefined : (s.nnc?.staleSince ?? at);
  s.nnc = {
    uid: uid ?? s.nnc?.uid,
    scaler,
    observed: {
      spec: observedSpec(nnc),
      ...(typeof generation === 'number' && Number.isFinite(generation) ? { generation } : {}),
    },
    backed,
    stale,
    // In pods: a dual-stack status holds each pod's addresses in two containers.
    allocated: poolSize(nnc),
    ...(staleSince !== undefined ? { staleSince } : {}),
  };
  if (recreated) {
    s.written = undefined;
    s.unwrittenMarks = 0;
    note(s, 'warn', 'NodeNetworkConfig recreated', { uid }, { type: 'nnc-recreated', uid: uid });
  }
  if (first || recreated) s.request = normaliseRequest(nnc.spec?.requestedIPCount);
  const malformed = malformedSpecField(nnc);
  if (malformed !== undefined) {
    note(s, 'warn', 'rejected NodeNetworkConfig', {
      ...aboutNnc(nnc),
      field: malformed,
      error: `${malformed} is malformed; the spec is written again`,
    });
  }
  const fields = {
    batch: scaler.batch,
    buffer: scaler.buffer,
    max: scaler.max,
    request: s.request,
  };
  if (warnings.length === 0) {
    note(s, 'info', 'scaler update', fields);
  } else {
    note(s, 'warn', 'scaler update', {
      ...fields,
      warnings: warnings.map((w) => ({ field: w.field, message: w.message })),
    });
    for (const w of warnings) {
      note(s, 'warn', undefined, undefined, {
        type: 'scaler-invalid',
        field: w.field,
        value: w.value,
        message: w.message,
      });
    }
  }
  if (first) note(s, 'info', undefined, undefined, { type: 'ready', request: s.request ?? 0 });
  return wantReconcile(s);
}

function onReconciled(s: MonitorState, o: ReconcileOutcome, ran: Ran): MonitorState {
  s.served = Math.max(s.served, ran.wanted);
  s.reconciles += 1;
  s.last = {
    at: o.at,
    outcome: o.kind,
    delta: o.delta,
    ...(o.error !== undefined ? { error: o.error } : {}),
  };
  s.failures = o.kind === 'failed' ? s.failures + 1 : 0;
  if (o.kind === 'failed') s.retryAt = o.wake?.at ?? o.at;
  if (o.kind === 'throttled') s.heldUntil = o.wake?.at ?? o.at;
  // A reconcile of an NNC since deleted and recreated tells nothing about the new one.
  const sameNnc = ran.uid === s.nnc?.uid;
  if (o.wrote) {
    s.writes += 1;
    s.lastWriteAt = o.at;
    if (sameNnc && o.spec !== undefined) {
      s.request = o.to;
      s.written = {
        spec: o.spec,
        ...(o.generation !== undefined ? { generation: o.generation } : {}),
      };
      s.unwrittenMarks = 0;
    }
  } else if (sameNnc) {
    s.unwrittenMarks += o.marked;
  }
  return s;
}
