// The entry point in a clone of the repository: the product's commands and the
// development ones, `pool-monitor apiserver` (the local API server) and
// `pool-monitor embedded` (a whole cluster in one process). Harness code may
// import the product; the product never imports this folder.
import '../../src/cli/early-exit.ts';
import { buildProgram } from '../../src/cli/product.ts';
import { runAsProcess } from '../../src/cli/program.ts';
import { BUILT_IN_SCENARIO_NAMES } from '../workload/builtins.ts';
import { apiserverCommand } from './apiserver.ts';
import { embeddedCommand } from './embedded.ts';

await runAsProcess(
  buildProgram({
    commands: [apiserverCommand(), embeddedCommand()],
    otherScenarios: {
      names: BUILT_IN_SCENARIO_NAMES,
      owner: 'the embedded cluster (bin/pool-monitor embedded)',
    },
  }),
);
