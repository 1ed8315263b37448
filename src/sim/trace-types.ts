// The shape of a demand trace, apart from the built-in traces themselves so
// that trace.ts (the registry) and traces/* (the shapes) do not import each other.

export interface TracePoint {
  /** Seconds from the start of the trace. */
  t: number;
  demand: number;
  /** Subnet exhaustion from this point on; unchanged when absent. */
  exhausted?: boolean;
}

export interface Trace {
  name: string;
  description: string;
  /** Sorted by `t`, first point at t = 0. */
  points: TracePoint[];
  /** Seconds the replay runs: past the last point, so the pool can settle. */
  durationSeconds: number;
}

export class TraceError extends Error {
  override readonly name = 'TraceError';
}
