// `pool-monitor embedded`: the whole system on this machine — local API
// server, fulfiller, N simulated nodes (real sidecar + simulated kubelet/CNI)
// and a workload scenario — ending with a report. SIGINT/SIGTERM end it
// cleanly (exit 0, report printed); persistent invariant violations exit 1.
import { Command, InvalidArgumentError, Option } from 'commander';
import { EMBEDDED_AZURE_LAYOUTS, type EmbeddedAzureLayout } from '../embedded/azure-report.ts';
import { LOG_LEVELS, type LogLevel } from '../../src/log/levels.ts';
import { BUILT_IN_SCENARIO_NAMES, DEFAULT_SCENARIO } from '../workload/builtins.ts';
import { ScenarioError } from '../workload/scenario.ts';
import { integerOption, numberOption, writableFileOption } from '../../src/cli/parse.ts';
import { listenError } from '../../src/cli/signals.ts';
import { IP_FAMILY_CHOICES, type IpFamilyChoice } from '../embedded/ip-family.ts';
import { MAX_NETNS_NODES, MAX_NETNS_PODS, NETNS_SCENARIO } from '../embedded/netns-limits.ts';

interface EmbeddedFlags {
  nodes?: number;
  scenario?: string;
  duration?: number;
  apiPort: number;
  serve?: boolean;
  tls?: boolean;
  report?: string;
  logFile?: string;
  logLevel: LogLevel;
  leakRate?: number;
  backend: 'cidr' | 'azure';
  azureLayout?: EmbeddedAzureLayout;
  azureTiming?: 'fast' | 'realistic';
  azureOtherWriters?: boolean;
  chaos?: number;
  seed?: number;
  netns?: boolean;
  ipFamily: IpFamilyChoice;
}

function logLevelOption(value: string): LogLevel {
  if (!(LOG_LEVELS as readonly string[]).includes(value)) {
    throw new InvalidArgumentError(`--log-level must be one of ${LOG_LEVELS.join(', ')}`);
  }
  return value as LogLevel;
}

function portOption(value: string): number {
  const n = integerOption('--api-port', 0)(value);
  if (n > 65535) throw new InvalidArgumentError(`--api-port must be 0-65535, got "${value}"`);
  return n;
}

function shareOption(value: string): number {
  const n = numberOption('--leak-rate', 0)(value);
  if (n > 1)
    throw new InvalidArgumentError(`--leak-rate must be a share from 0 to 1, got "${value}"`);
  return n;
}

function chaosRate(value: string): number {
  const n = numberOption('--chaos', 0)(value);
  if (n > 1) throw new InvalidArgumentError(`--chaos must be a rate from 0 to 1, got "${value}"`);
  return n;
}

function positiveSeconds(value: string): number {
  const n = numberOption('--duration', 0)(value);
  if (n <= 0 || n > 86_400) {
    throw new InvalidArgumentError(`--duration must be seconds in (0, 86400], got "${value}"`);
  }
  return n;
}

export function embeddedCommand(): Command {
  return new Command('embedded')
    .description(
      'Run a local API server, the fulfiller, N simulated nodes and a workload scenario; end with a report',
    )
    .option('--nodes <n>', "number of nodes (default: the scenario's)", integerOption('--nodes', 1))
    .option(
      '--scenario <name|file>',
      `built-in scenario (${BUILT_IN_SCENARIO_NAMES.join(', ')}) or a YAML/JSON file (default: ${DEFAULT_SCENARIO}; with --netns, ${NETNS_SCENARIO})`,
    )
    .option('--duration <seconds>', "run length (default: the scenario's)", positiveSeconds)
    .addOption(
      new Option('--api-port <port>', 'API server port on 127.0.0.1')
        .argParser(portOption)
        .default(0, '0, a free one'),
    )
    .addOption(
      new Option(
        '--ip-family <family>',
        "the pods' addresses: ipv4, ipv6 (a unique local subnet as large as the scenario's IPv4 one) or dual (one of each)",
      )
        .choices([...IP_FAMILY_CHOICES])
        .default('ipv4'),
    )
    .option('--serve', 'keep everything up after the scenario until SIGINT/SIGTERM')
    .option('--tls', 'the API server serves HTTPS with a CA made at start (in its kubeconfig)')
    .addOption(
      new Option(
        '--backend <kind>',
        "the fulfiller's backend: cidr, or azure (on the project's loopback ARM emulator)",
      )
        .choices(['cidr', 'azure'])
        .default('cidr'),
    )
    .addOption(
      // Dev-only (hidden): which VM layout the emulated Azure has.
      new Option(
        '--azure-layout <layout>',
        'with --backend azure: mixed (--pod-subnet-id; pod NIC, node subnet and scale-set nodes) or node-subnets (no --pod-subnet-id; nodes in two subnets, scale-set nodes)',
      )
        .choices([...EMBEDDED_AZURE_LAYOUTS])
        .hideHelp(),
    )
    .addOption(
      new Option(
        '--azure-timing <timing>',
        "with --backend azure: how long ARM's operations run: fast (a second) or realistic (NIC PUTs 10-60 s, scale-set VM updates 30-120 s)",
      )
        .choices(['fast', 'realistic'])
        .default('fast'),
    )
    .option(
      '--azure-other-writers',
      'with --backend azure: cloud-provider-azure writes whole NICs back from stale reads (a read every 20 s, written 5 s later, 90 s with --azure-timing realistic) and a scale-set instance is reimaged every 2 minutes; the report counts what they removed and what became of it',
    )
    .option('--report <file>', 'also write the report as JSON', writableFileOption('--report'))
    .option(
      '--log-file <file>',
      'component log, JSON lines (default: a new file in ~/.local/state/pool-monitor)',
      writableFileOption('--log-file'),
    )
    .option(
      '--log-level <level>',
      'component log level: error, warn, info or debug',
      logLevelOption,
      'info',
    )
    .option(
      '--leak-rate <share>',
      "share (0-1) of CNI DELs the simulated kubelets drop, leaking IPs for the sidecars to reclaim (default: the scenario's, else 0)",
      shareOption,
    )
    .option(
      '--chaos <rate>',
      'fail at least this share (0-1) of API writes (500/409/429), drop watches, compact history, kill -9 and restart every sidecar and fulfiller',
      chaosRate,
    )
    .option(
      '--seed <n>',
      'seed of the chaos (default: a new one, printed, to replay the run)',
      integerOption('--seed', 0),
    )
    .option(
      '--netns',
      `root: each node a network namespace, each pod one configured by the real macvlan plugin with pool-monitor-cni as IPAM, pinged in each family, removed at the end; at most ${MAX_NETNS_NODES} nodes and ${MAX_NETNS_PODS} pods (scenario ${NETNS_SCENARIO} unless told)`,
    )
    .action(async (flags: EmbeddedFlags) => {
      if (flags.seed !== undefined && flags.chaos === undefined)
        throw new Error('--seed needs --chaos');
      if (flags.azureLayout !== undefined && flags.backend !== 'azure')
        throw new Error('--azure-layout needs --backend azure');
      if (flags.azureTiming === 'realistic' && flags.backend !== 'azure')
        throw new Error('--azure-timing needs --backend azure');
      if (flags.azureOtherWriters && flags.backend !== 'azure')
        throw new Error('--azure-other-writers needs --backend azure');
      if (flags.chaos !== undefined && flags.backend === 'azure')
        throw new Error(
          '--chaos runs the fulfiller as processes on the CIDR backend: it cannot be combined with --backend azure',
        );
      const abort = new AbortController();
      let signals = 0;
      const onSignal = (): void => {
        signals += 1;
        if (signals > 1) process.exit(130); // a second signal: stop waiting
        abort.abort();
      };
      process.on('SIGINT', onSignal);
      process.on('SIGTERM', onSignal);
      try {
        const { runEmbedded } = await import('../embedded/run.ts');
        const result = await runEmbedded(
          {
            scenario: flags.scenario ?? (flags.netns ? NETNS_SCENARIO : DEFAULT_SCENARIO),
            ...(flags.netns ? { netns: true } : {}),
            ...(flags.ipFamily !== 'ipv4' ? { ipFamily: flags.ipFamily } : {}),
            ...(flags.nodes !== undefined ? { nodes: flags.nodes } : {}),
            ...(flags.duration !== undefined ? { durationSeconds: flags.duration } : {}),
            apiPort: flags.apiPort,
            serve: flags.serve === true,
            tls: flags.tls === true,
            ...(flags.report !== undefined ? { reportFile: flags.report } : {}),
            ...(flags.logFile !== undefined ? { logFile: flags.logFile } : {}),
            logLevel: flags.logLevel,
            ...(flags.leakRate !== undefined ? { leakRate: flags.leakRate } : {}),
            backend: flags.backend,
            ...(flags.azureLayout !== undefined ? { azureLayout: flags.azureLayout } : {}),
            ...(flags.azureTiming === 'realistic' ? { azureTiming: 'realistic' as const } : {}),
            ...(flags.azureOtherWriters ? { azureOtherWriters: true } : {}),
            ...(flags.chaos !== undefined
              ? {
                  chaos: {
                    rate: flags.chaos,
                    seed: flags.seed ?? Math.floor(Math.random() * 2 ** 31),
                  },
                }
              : {}),
          },
          { out: process.stdout, err: process.stderr, signal: abort.signal },
        );
        process.exitCode = result.exitCode;
      } catch (err) {
        // A scenario that does not load is a bad --scenario: say so.
        if (err instanceof ScenarioError) throw new Error(`--scenario: ${err.message}`);
        throw listenError('--api-port', flags.apiPort, err);
      } finally {
        process.off('SIGINT', onSignal);
        process.off('SIGTERM', onSignal);
      }
      // Keep-alive sockets of the client library must not hold the exit back.
      const code = typeof process.exitCode === 'number' ? process.exitCode : 0;
      setTimeout(() => process.exit(code), 1000).unref();
    });
}
