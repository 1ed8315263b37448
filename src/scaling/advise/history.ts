// Advice from a recorded demand history (the node's pool history, or a
// trace) through the fast pool model: every candidate batch size and release
// policy, ranked. Synchronous per candidate, so a caller that must stay
// responsive (the sidecar) can evaluate one candidate per turn of the loop.
import type { Scaler } from '../scaler.ts';
import {
  ADVISED_POLICIES,
  buildAdvice,
  candidates,
  type Advice,
  type Candidate,
  type Figures,
} from './advise.ts';
import { runPoolModel, type DemandPoint } from './pool-model.ts';

export interface HistoryAdviceInput {
  source: string;
  points: readonly DemandPoint[];
  durationMs: number;
  /** The node's scaler (batch, buffer, max) as it is now. */
  scaler: Scaler;
  fulfilDelayMs: number;
  idleRatio: number;
}

export function evaluateCandidate(input: HistoryAdviceInput, c: Candidate): Candidate & Figures {
  const policy = ADVISED_POLICIES.find((p) => p.policy === c.policy);
  if (policy === undefined) throw new Error(`unknown policy ${c.policy}`);
  const f = runPoolModel({
    points: input.points,
    durationMs: input.durationMs,
    scaler: { ...input.scaler, batch: c.batch },
    policy: policy.make(),
    fulfilDelayMs: input.fulfilDelayMs,
  });
  return {
    ...c,
    nncWrites: f.nncWrites,
    ipsAllocated: f.ipsAllocated,
    ipsReleased: f.ipsReleased,
    idleIpSeconds: f.idleIpSeconds,
    podWaitP99Seconds: f.podWaitP99Seconds,
  };
}

export function adviseOnHistory(input: HistoryAdviceInput): Advice {
  const all = candidates(input.scaler.batch, input.scaler.max).map((c) =>
    evaluateCandidate(input, c),
  );
  return buildAdvice(
    input.source,
    input.durationMs / 1000,
    input.scaler.batch,
    all,
    input.idleRatio,
  );
}
