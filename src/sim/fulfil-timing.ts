// How long the simulated control plane takes over one round of a node's
// fulfilment (virtual-node.ts), drawn from a backend's timings
// (control-plane-timings.ts):
// - `azure`: the NIC PUT's operation, drawn uniformly from ARM's 10–60 s
//   as the emulator draws it, and seen done at the first poll after it
//   (polls at once and then every Retry-After, 10 s): 20, 30, … 60 s;
// - `azure-scale-set`: the same for a Uniform scale-set VM's update;
// - `cidr`: one status write, log-uniform over the API server's 20 ms–1 s;
// - a fixed time, for comparison with earlier runs.
//
// The speed is the control plane's, not the policy's: a draw holds for a
// span (SPEED_SPAN_MS, an hour: ARM's speed drifts over a day) and depends
// only on the seed and the span a round begins in. Two policies replayed on
// one trace so meet the same control plane (a round begun in the same span
// takes as long under either), and what differs between them is what they
// asked of it and when. The idle account models CNS v2's rounds at the speed
// it measures on the pool's own; with a draw per round (`speedSpanMs` of a
// minute) the speed of CNS v2's rounds is one no observation tells, and its
// idle is an estimate (docs/decisions/0034).
import {
  ARM_POLL_RETRY_AFTER_MS,
  AZURE_OPERATION_MS,
  KUBE_STATUS_WRITE_MS,
} from './control-plane-timings.ts';
import { seededRandom } from './random.ts';

export const FULFIL_TIMING_NAMES = ['cidr', 'azure', 'azure-scale-set'] as const;
export type FulfilTimingName = (typeof FULFIL_TIMING_NAMES)[number];
export type FulfilTiming = FulfilTimingName | { fixedMs: number };

/** How long one draw of the control plane's speed holds (ms), by default. */
export const SPEED_SPAN_MS = 3_600_000;

/** The timing as a person reads it: `azure`, `cidr`, `2 s`. */
export function timingLabel(timing: FulfilTiming): string {
  return typeof timing === 'string' ? timing : `${timing.fixedMs / 1000} s`;
}

/** `azure`, `cidr`, `azure-scale-set` or a number of seconds; a clear error otherwise. */
export function parseFulfilTiming(text: string): FulfilTiming {
  if ((FULFIL_TIMING_NAMES as readonly string[]).includes(text)) return text as FulfilTimingName;
  const seconds = Number(text);
  if (text.trim() !== '' && Number.isFinite(seconds) && seconds >= 0) {
    return { fixedMs: seconds * 1000 };
  }
  throw new Error(
    `fulfil timing must be one of ${FULFIL_TIMING_NAMES.join(', ')} or seconds (got ${JSON.stringify(text)})`,
  );
}

/** A uniform draw in [0, 1) for the span of `spanMs` that `startMs` falls in. */
function spanDraw(seed: number, startMs: number, spanMs: number): number {
  const span = Number.isFinite(spanMs) ? Math.floor(startMs / spanMs) : 0;
  const mixed = Math.imul(seed >>> 0, 0x9e3779b1) ^ Math.imul(span + 1, 0x85ebca6b);
  return seededRandom(mixed >>> 0)();
}

/** ARM's operation of [min, max] ms, seen done at the first poll after it. */
function armRound(range: readonly [number, number], u: number): number {
  const [min, max] = range;
  const operation = min + u * (max - min);
  return Math.max(1, Math.ceil(operation / ARM_POLL_RETRY_AFTER_MS)) * ARM_POLL_RETRY_AFTER_MS;
}

/**
 * The round durations (ms) of one replay: a function of the round's start
 * (ms of virtual time), the timing and the seed only.
 */
export function roundDurations(
  timing: FulfilTiming,
  seed = 1,
  spanMs = SPEED_SPAN_MS,
): (startMs: number) => number {
  if (typeof timing !== 'string') {
    const ms = timing.fixedMs;
    if (!(Number.isFinite(ms) && ms >= 0)) throw new Error(`fixed fulfil time must be >= 0 ms`);
    return () => ms;
  }
  switch (timing) {
    case 'azure':
      return (start) => armRound(AZURE_OPERATION_MS.nic, spanDraw(seed, start, spanMs));
    case 'azure-scale-set':
      return (start) => armRound(AZURE_OPERATION_MS.vm, spanDraw(seed, start, spanMs));
    case 'cidr': {
      const [min, max] = KUBE_STATUS_WRITE_MS;
      return (start) => Math.round(min * (max / min) ** spanDraw(seed, start, spanMs));
    }
  }
}
