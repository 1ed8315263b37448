// The crash test's random streams (crash.process.test.ts). The plan - how
// demand moves, which pod goes, when the store is lost, how long each sidecar
// lives before its kill - is drawn from the seed's own stream; the CNI traffic
// of a cycle from a stream of its own, seeded from the seed and the cycle.
// How many requests fit before a kill depends on how fast the sidecar
// answers (the machine's load, what the sidecar does at start), so with one
// shared stream two runs of one seed ran two different plans and their
// counts (leaks reclaimed, addresses adopted) could not be compared.
import { seededRandom } from '../../src/sim/random.ts';

export interface CrashStreams {
  /** Demand changes, pods deleted, store losses, kill moments. */
  plan: () => number;
  /** Cycle `cycle`'s CNI traffic. */
  traffic(cycle: number): () => number;
}

export function crashStreams(seed: number): CrashStreams {
  return {
    plan: seededRandom(seed),
    // Seeded a golden-ratio step per seed apart from the plan's: every cycle its own start.
    traffic: (cycle) => seededRandom((Math.imul(seed, 0x9e3779b1) + cycle + 1) >>> 0),
  };
}
