// The product's entry point: `pool-monitor sidecar|fulfiller|simulate`, as the
// image runs it. In a clone, bin/pool-monitor starts harness/cli/main.ts
// instead, which adds the development commands.
import './early-exit.ts';
import { buildProgram } from './product.ts';
import { runAsProcess } from './program.ts';

await runAsProcess(buildProgram());
