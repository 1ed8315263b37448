// The product's commands, as the image offers them: sidecar, fulfiller and
// simulate. The harness's entry point adds the development commands.
import type { Command } from 'commander';
import { fulfillerCommand } from './fulfiller.ts';
import { programOf } from './program.ts';
import { simulateCommand, type OtherScenarios } from './simulate.ts';
import { sidecarCommand } from './sidecar.ts';

/** What an entry point adds to the product's commands. */
export interface ProgramExtras {
  commands?: Command[];
  /** Scenario names `simulate` points elsewhere (the embedded cluster's). */
  otherScenarios?: OtherScenarios;
}

export function buildProgram(extras: ProgramExtras = {}): Command {
  return programOf([
    ...(extras.commands ?? []),
    fulfillerCommand(),
    simulateCommand(extras.otherScenarios),
    sidecarCommand(),
  ]);
}
