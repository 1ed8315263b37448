// `pool-monitor simulate`: replay a demand trace through the real monitor in
// virtual time and print what the pool did. Try a scaler before a cluster.
import { Command, InvalidArgumentError, Option } from 'commander';
import { readFileSync } from 'node:fs';
import { FULFIL_TIMING_NAMES, type FulfilTimingName } from '../sim/fulfil-timing.ts';
import type { SimulationSummary } from '../sim/summary.ts';
import { BUILT_IN_TRACES, DEFAULT_TRACE, parseTraceCsv, type Trace } from '../sim/trace.ts';
import { parseReleaseDelay, type ReleaseDelay } from '../scaling/release-delay-value.ts';
import { integerOption, numberOption } from './parse.ts';
import type { CompareCommandOptions } from './simulate-compare.ts';

function releaseDelayOption(value: string): ReleaseDelay {
  try {
    return parseReleaseDelay(value);
  } catch (err) {
    throw new InvalidArgumentError((err as Error).message);
  }
}

function fulfilTimingOption(value: string): FulfilTimingName {
  if ((FULFIL_TIMING_NAMES as readonly string[]).includes(value)) return value as FulfilTimingName;
  throw new InvalidArgumentError(
    `must be one of ${FULFIL_TIMING_NAMES.join(', ')} (a fixed time is --fulfil-delay SECONDS)`,
  );
}

/**
 * Reads `--scenario`: a built-in trace or a CSV file. `otherScenarios` are
 * names another command owns (the embedded cluster's, when the development
 * commands are there): naming one gets a pointer to that command.
 */
export function loadTrace(scenario: string, otherScenarios: OtherScenarios = NO_OTHER): Trace {
  const builtIn = Object.hasOwn(BUILT_IN_TRACES, scenario) ? BUILT_IN_TRACES[scenario] : undefined;
  if (builtIn) return builtIn();
  let text: string;
  try {
    text = readFileSync(scenario, 'utf8');
  } catch {
    const traces = Object.keys(BUILT_IN_TRACES).join(', ');
    if (otherScenarios.names.includes(scenario)) {
      throw new Error(
        `--scenario: "${scenario}" is a scenario of ${otherScenarios.owner}; simulate replays ${traces} or a CSV file`,
      );
    }
    throw new Error(
      `--scenario: unknown scenario "${scenario}": not a built-in trace (${traces}) nor a readable CSV file`,
    );
  }
  return parseTraceCsv(text, scenario);
}

export function formatSummary(s: SimulationSummary): string {
  const rows: [string, string][] = [
    ['scenario', s.scenario],
    ['simulated', `${(s.simulatedSeconds / 3600).toFixed(2)} h`],
    ['reconciles', String(s.reconciles)],
    ['NNC writes', String(s.nncWrites)],
    ['IPs allocated', String(s.ipsAllocated)],
    ['IPs released', String(s.ipsReleased)],
    ['peak demand', String(s.peakDemand)],
    ['peak pool', String(s.peakPool)],
    ['idle IP-seconds', String(s.idleIpSeconds)],
    ['seconds under-provisioned', String(s.secondsUnderProvisioned)],
    ['pods', String(s.pods)],
    [
      'pod wait p50/p99/max',
      `${s.podWaitP50Seconds} / ${s.podWaitP99Seconds} / ${s.podWaitMaxSeconds} s`,
    ],
  ];
  const width = Math.max(...rows.map(([k]) => k.length));
  return ['simulation summary', ...rows.map(([k, v]) => `  ${k.padEnd(width)}  ${v}`)].join('\n');
}

/** Scenario names that belong to another command, and how to name that command. */
export interface OtherScenarios {
  names: readonly string[];
  owner: string;
}

const NO_OTHER: OtherScenarios = { names: [], owner: '' };

export function simulateCommand(otherScenarios: OtherScenarios = NO_OTHER): Command {
  return (
    new Command('simulate')
      .description('Replay a demand trace through the real pool monitor in virtual time')
      .addOption(
        new Option(
          '--scenario <name|file>',
          `built-in trace (${Object.keys(BUILT_IN_TRACES).join(', ')}) or a CSV file "seconds,demand[,exhausted]"`,
        ).default(DEFAULT_TRACE),
      )
      .option('--batch <n>', 'scaler batchSize', integerOption('--batch'), 16)
      .option(
        '--threshold <percent>',
        'scaler requestThresholdPercent',
        numberOption('--threshold'),
        50,
      )
      .option('--max <n>', 'scaler maxIPCount', integerOption('--max'), 250)
      .addOption(
        new Option(
          '--release-delay <seconds|auto>',
          'scale-down damping: seconds (0 is CNS v2 exactly) or auto',
        )
          .argParser(releaseDelayOption)
          .default({ kind: 'fixed', seconds: 0 } as ReleaseDelay, '0'),
      )
      .option(
        '--fulfil-delay <seconds>',
        'control-plane delay before a write is fulfilled',
        numberOption('--fulfil-delay', 0),
        5,
      )
      .addOption(
        new Option(
          '--fulfil-timing <backend>',
          `the control plane at a backend's speed instead of a fixed delay: ${FULFIL_TIMING_NAMES.join(', ')} (one round of the node at a time, as the fulfiller works; docs/decisions/0034)`,
        ).argParser(fulfilTimingOption),
      )
      .option('--verbose', "also print the monitor's decision log (JSON lines) before the summary")
      // The summary alone is the default now; --quiet stays accepted for old scripts.
      .addOption(new Option('--quiet').hideHelp())
      .option('--json', 'print the summary as one JSON object')
      .option(
        '--compare',
        'run the trace through CNS v2, a CNS v1 model, fixed delays, Cilium-like and AWS-like models and auto; print a table',
      )
      .option(
        '--policies <names>',
        'with --compare: only these policies, comma-separated',
        (v: string) => v.split(',').map((p) => p.trim()),
      )
      .option('--report <file.html>', 'write the comparison as one self-contained HTML page')
      .option(
        '--advise',
        'print the batch size and release policy that would have cut NNC writes most within an idle-IP budget',
      )
      .option(
        '--idle-budget <ratio>',
        'idle IP-seconds allowed, as a multiple of CNS v2: auto keeps within it, --advise advises within it',
        numberOption('--idle-budget', 1),
        1.5,
      )
      .action(
        async (
          opts: Omit<CompareCommandOptions, 'trace'> & { scenario: string; verbose?: boolean },
        ) => {
          const trace = loadTrace(opts.scenario, otherScenarios);
          if (opts.compare || opts.report !== undefined || opts.advise) {
            const { runCompareCommand } = await import('./simulate-compare.ts');
            await runCompareCommand({ ...opts, trace });
            return;
          }
          const [{ runSimulation }, { default: winston }, { jsonLine }, { releasePolicy }] =
            await Promise.all([
              import('../sim/simulate.ts'),
              import('winston'),
              import('../log/logger.ts'),
              import('../scaling/policies/release-delay.ts'),
            ]);
          const started = process.hrtime.bigint();
          // SIGINT/SIGTERM end the replay early; the summary covers what ran, exit 0.
          const abort = new AbortController();
          const onSignal = (): void => abort.abort();
          process.once('SIGINT', onSignal);
          process.once('SIGTERM', onSignal);
          const { summary } = await runSimulation({
            signal: abort.signal,
            trace,
            scaler: {
              batchSize: opts.batch,
              requestThresholdPercent: opts.threshold,
              releaseThresholdPercent: 150,
              maxIPCount: opts.max,
            },
            releaseDelaySeconds: 0,
            policy: releasePolicy(opts.releaseDelay, opts.idleBudget),
            fulfilDelaySeconds: opts.fulfilDelay,
            ...(opts.fulfilTiming !== undefined ? { fulfilTiming: opts.fulfilTiming } : {}),
            ...(opts.verbose
              ? { logTransport: new winston.transports.Console({ format: jsonLine }) }
              : {}),
          });
          process.off('SIGINT', onSignal);
          process.off('SIGTERM', onSignal);
          const wallMs = Number(process.hrtime.bigint() - started) / 1e6;
          if (opts.json) {
            process.stdout.write(`${JSON.stringify({ ...summary, wallMs: Math.round(wallMs) })}\n`);
          } else {
            process.stdout.write(
              `${formatSummary(summary)}\n  ${'wall time'.padEnd(25)}  ${(wallMs / 1000).toFixed(2)} s\n`,
            );
          }
        },
      )
  );
}
