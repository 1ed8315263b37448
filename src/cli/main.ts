// The `pool-monitor` command line: one sub-command per file in this folder.
import './early-exit.ts';
import { Command, CommanderError } from 'commander';
import { readFileSync } from 'node:fs';
import { apiserverCommand } from './apiserver.ts';
import { embeddedCommand } from './embedded.ts';
import { fulfillerCommand } from './fulfiller.ts';
import { errorLine, plainDefaults } from './parse.ts';
import { simulateCommand } from './simulate.ts';
import { sidecarCommand } from './sidecar.ts';
import { errorText } from '../log/error-text.ts';

const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  version: string;
};

export function buildProgram(): Command {
  const program = new Command('pool-monitor')
    .description("Keeps every Kubernetes node's pool of pod IPs the right size, Azure CNS style")
    .version(pkg.version)
    .exitOverride();
  // Every error, commander's too, as one line naming the flag: `pool-monitor: ...`.
  program.configureOutput({ outputError: (text, write) => write(errorLine(text)) });
  // Sub-commands register themselves here, one line each.
  program.addCommand(apiserverCommand());
  program.addCommand(embeddedCommand());
  program.addCommand(fulfillerCommand());
  program.addCommand(simulateCommand());
  program.addCommand(sidecarCommand());
  // addCommand does not pass these on as .command() would.
  for (const sub of program.commands) {
    sub.exitOverride().configureOutput({ outputError: (text, write) => write(errorLine(text)) });
  }
  return plainDefaults(program);
}

async function main(argv: string[]): Promise<number> {
  const program = buildProgram();
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

const code = await main(process.argv);
process.exitCode = code;
// A command that failed (a port in use, a bad --listen, an unreadable state
// dir) has said so in one line on stderr. Whatever it had opened before (a
// watch, a keep-alive socket, a signal handler) must not keep the process
// alive: it ends now. (stderr is synchronous on Linux pipes, files and TTYs.)
if (code !== 0) process.exit(code);
