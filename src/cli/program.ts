// The `pool-monitor` program: the product's sub-commands, one per file in this
// folder, and the one way every entry point runs them. The development
// commands (the local API server, the embedded cluster) live in the harness
// and are added by its entry point, harness/cli/main.ts; the image holds this
// folder only.
import { Command, CommanderError } from 'commander';
import { readFileSync } from 'node:fs';
import { fulfillerCommand } from './fulfiller.ts';
import { errorLine, plainDefaults } from './parse.ts';
import { simulateCommand, type OtherScenarios } from './simulate.ts';
import { sidecarCommand } from './sidecar.ts';
import { errorText } from '../log/error-text.ts';

const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  version: string;
};

/** What an entry point adds to the product's commands. */
export interface ProgramExtras {
  commands?: Command[];
  /** Scenario names `simulate` points elsewhere (the embedded cluster's). */
  otherScenarios?: OtherScenarios;
}

export function buildProgram(extras: ProgramExtras = {}): Command {
  const program = new Command('pool-monitor')
    .description("Keeps every Kubernetes node's pool of pod IPs the right size, Azure CNS style")
    .version(pkg.version)
    .exitOverride();
  // Every error, commander's too, as one line naming the flag: `pool-monitor: ...`.
  program.configureOutput({ outputError: (text, write) => write(errorLine(text)) });
  const commands = [
    ...(extras.commands ?? []),
    fulfillerCommand(),
    simulateCommand(extras.otherScenarios),
    sidecarCommand(),
  ].sort((a, b) => a.name().localeCompare(b.name()));
  for (const sub of commands) {
    program.addCommand(sub);
    // addCommand does not pass these on as .command() would.
    sub.exitOverride().configureOutput({ outputError: (text, write) => write(errorLine(text)) });
  }
  return plainDefaults(program);
}

/** Parses argv and runs the command; the exit code. */
export async function runProgram(program: Command, argv: string[]): Promise<number> {
  if (argv.length <= 2) {
    program.outputHelp();
    return 0;
  }
  try {
    await program.parseAsync(argv);
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version end here with code 0; bad flags with 1.
      return err.exitCode;
    }
    process.stderr.write(`pool-monitor: ${errorText(err)}\n`);
    return 1;
  }
}

/** Runs the program as the process: sets the exit code, and ends a failed run at once. */
export async function runAsProcess(program: Command): Promise<void> {
  const code = await runProgram(program, process.argv);
  process.exitCode = code;
  // A command that failed (a port in use, a bad --listen, an unreadable state
  // dir) has said so in one line on stderr. Whatever it had opened before (a
  // watch, a keep-alive socket, a signal handler) must not keep the process
  // alive: it ends now. (stderr is synchronous on Linux pipes, files and TTYs.)
  if (code !== 0) process.exit(code);
}
