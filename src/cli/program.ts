// The `pool-monitor` program: a set of sub-commands (one per file in this
// folder) under one name and version, and the one way every entry point runs
// it. Which commands an entry point offers is its own choice: main.ts (the
// image) the product's (product.ts), sidecar-main.ts the node agent's alone
// (the bundled file, docs/decisions/0027), harness/cli/main.ts the product's
// and the development ones.
import { Command, CommanderError } from 'commander';
// Imported, not read at run time: the bundled node agent has no package.json beside it.
import pkg from '../../package.json' with { type: 'json' };
import { errorLine, plainDefaults } from './parse.ts';
import { errorText } from '../log/error-text.ts';

/** `pool-monitor` with these sub-commands, listed by name. */
export function programOf(subCommands: Command[]): Command {
  const program = new Command('pool-monitor')
    .description("Keeps every Kubernetes node's pool of pod IPs the right size, Azure CNS style")
    .version(pkg.version)
    .exitOverride();
  // Every error, commander's too, as one line naming the flag: `pool-monitor: ...`.
  program.configureOutput({ outputError: (text, write) => write(errorLine(text)) });
  const commands = [...subCommands].sort((a, b) => a.name().localeCompare(b.name()));
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
  // `ps` and `top` tell the processes apart: pool-monitor-sidecar,
  // pool-monitor-fulfiller, ... (Linux truncates the short name, comm, to 15
  // characters; the command line shows it whole).
  program.hook('preAction', (_program, action) => {
    process.title = `pool-monitor-${action.name()}`;
  });
  const code = await runProgram(program, process.argv);
  process.exitCode = code;
  // A command that failed (a port in use, a bad --listen, an unreadable state
  // dir) has said so in one line on stderr. Whatever it had opened before (a
  // watch, a keep-alive socket, a signal handler) must not keep the process
  // alive: it ends now. (stderr is synchronous on Linux pipes, files and TTYs.)
  if (code !== 0) process.exit(code);
}
