// The node agent's entry point as one bundled file (dist/sidecar.js, built by
// scripts/bundle-sidecar.ts; docs/decisions/0027): the program with the
// sidecar command alone, so that the bundle holds what the agent runs and
// nothing of the fulfiller, the Azure SDK or the simulator.
import './early-exit.ts';
import { programOf, runAsProcess } from './program.ts';
import { sidecarCommand } from './sidecar.ts';

await runAsProcess(programOf([sidecarCommand()]));
