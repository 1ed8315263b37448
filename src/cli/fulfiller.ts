// `pool-monitor fulfiller`: the control-plane side that makes every NNC's
// status follow its spec, allocating from a pod subnet (--backend cidr) or as
// secondary ipConfigurations on each node's Azure NIC (--backend azure, the
// --azure-* flags), and owns the NNC lifecycle. Replicas compete for a Lease (--leader-elect); only
// the holder writes. Runs until SIGINT/SIGTERM, then steps down, releases the
// lease (a standby takes over at once) and exits 0.
import { Command, InvalidArgumentError, Option } from 'commander';
import type { AzureFlags } from './azure-options.ts';
import { azureOptions, azureSettingsFromFlags } from './azure-options.ts';
import { makeFulfillerConfig } from '../fulfiller/config.ts';
import { canonicalSubnet } from '../fulfiller/families.ts';
import { parseListen } from '../fulfiller/http.ts';
import { nodeSelector } from '../fulfiller/nodes.ts';
import { CLIENT_GO_TIMINGS, validateTimings } from '../leader/lease.ts';
import { LOG_LEVELS, type LogLevel } from '../log/levels.ts';
import { DEFAULT_NAMESPACE } from '../nnc/types.ts';
import { withEnvFallbacks } from './env-flags.ts';
import { booleanOption, durationOption, integerOption } from './parse.ts';

interface FulfillerFlags extends AzureFlags {
  kubeconfig?: string;
  namespace: string;
  subnet?: string[];
  subnetName?: string;
  batch: number;
  requestThreshold: number;
  releaseThreshold: number;
  max: number;
  exhaustionThreshold?: number;
  exhaustionHold: number;
  quarantine: number;
  workers: number;
  logLevel: LogLevel;
  backend: 'cidr' | 'azure';
  leaderElect: boolean;
  leaderElectLeaseDuration: number;
  leaderElectRenewDeadline: number;
  leaderElectRetryPeriod: number;
  listen: { host: string; port: number };
  nodeSelector?: string;
}

/**
 * `--subnet`, once per address family: each value added to those given
 * before it; a comma separates two in one value (`POOL_MONITOR_SUBNET`).
 */
function cidrOption(value: string, previous: string[] | undefined): string[] {
  try {
    return [...(previous ?? []), ...value.split(',').map((v) => canonicalSubnet(v.trim()))];
  } catch (err) {
    throw new InvalidArgumentError((err as Error).message);
  }
}

function listenOption(value: string): { host: string; port: number } {
  try {
    return parseListen(value);
  } catch (err) {
    throw new InvalidArgumentError((err as Error).message);
  }
}

function selectorOption(value: string): string {
  try {
    nodeSelector(value);
  } catch (err) {
    throw new InvalidArgumentError((err as Error).message);
  }
  return value;
}

function logLevelOption(value: string): LogLevel {
  if (!(LOG_LEVELS as readonly string[]).includes(value)) {
    throw new InvalidArgumentError(`must be one of ${LOG_LEVELS.join(', ')}`);
  }
  return value as LogLevel;
}

export function fulfillerCommand(): Command {
  const command = new Command('fulfiller')
    .description(
      "Create every Node its NodeNetworkConfig and make its status follow its spec, allocating pod IPs from a subnet or on the nodes' Azure NICs",
    )
    .option('--kubeconfig <file>', 'kubeconfig file (default: $KUBECONFIG, then in-cluster)')
    .option('--namespace <ns>', 'namespace of the NNCs and CSSs', DEFAULT_NAMESPACE)
    .option(
      '--subnet <cidr>',
      'pod subnet to allocate from (--backend cidr); twice for dual-stack, once with an IPv4 and once with an IPv6 CIDR (default: 10.240.0.0/16)',
      cidrOption,
    )
    .option(
      '--subnet-name <name>',
      'subnet and ClusterSubnetState name (--backend cidr; default: from the CIDR)',
    )
    .option('--batch <n>', 'status.scaler.batchSize', integerOption('--batch', 1), 16)
    .option(
      '--request-threshold <percent>',
      'status.scaler.requestThresholdPercent',
      integerOption('--request-threshold', 1),
      50,
    )
    .option(
      '--release-threshold <percent>',
      'status.scaler.releaseThresholdPercent',
      integerOption('--release-threshold', 1),
      150,
    )
    .option('--max <n>', 'status.scaler.maxIPCount (at most 250)', integerOption('--max', 1), 250)
    .option(
      '--exhaustion-threshold <n>',
      'mark the subnet exhausted when fewer addresses are free (default: the batch size)',
      integerOption('--exhaustion-threshold', 0),
    )
    .option(
      '--exhaustion-hold <seconds>',
      'keep a subnet published as exhausted at least this long',
      integerOption('--exhaustion-hold', 0),
      30,
    )
    .option('--workers <n>', 'nodes served in parallel', integerOption('--workers', 1), 8)
    .option(
      '--quarantine <seconds>',
      "keep a deleted Node's addresses this long (given back if it re-registers)",
      integerOption('--quarantine', 0),
      120,
    )
    .option('--log-level <level>', 'log level: error, warn, info or debug', logLevelOption, 'info')
    .addOption(
      new Option('--backend <kind>', 'who owns the addresses')
        .choices(['cidr', 'azure'])
        .default('cidr'),
    )
    .option(
      '--node-selector <labels>',
      'label selector of the Nodes that get an NNC; every Node when absent',
      selectorOption,
    )
    .addOption(
      new Option(
        '--leader-elect <bool>',
        'compete for the Lease pool-monitor-fulfiller; only the holder writes',
      )
        .argParser(booleanOption('--leader-elect'))
        .default(true),
    )
    .addOption(
      new Option(
        '--leader-elect-lease-duration <duration>',
        'how long a standby waits after the last renewal it saw',
      )
        .argParser(durationOption('--leader-elect-lease-duration'))
        .default(CLIENT_GO_TIMINGS.leaseDurationMs, '15s'),
    )
    .addOption(
      new Option(
        '--leader-elect-renew-deadline <duration>',
        'the holder stops writing when it could not renew for this long',
      )
        .argParser(durationOption('--leader-elect-renew-deadline'))
        .default(CLIENT_GO_TIMINGS.renewDeadlineMs, '10s'),
    )
    .addOption(
      new Option('--leader-elect-retry-period <duration>', 'time between lease attempts')
        .argParser(durationOption('--leader-elect-retry-period'))
        .default(CLIENT_GO_TIMINGS.retryPeriodMs, '2s'),
    )
    .addOption(
      new Option('--listen <host:port>', 'serve /healthz, /readyz and /metrics here')
        .argParser(listenOption)
        .default(parseListen('127.0.0.1:10093'), '127.0.0.1:10093'),
    );
  for (const option of azureOptions()) command.addOption(option);
  return withEnvFallbacks(command).action(async (flags: FulfillerFlags) => {
    // Checked before anything connects anywhere (one-line errors naming the flag).
    const azure = flags.backend === 'azure' ? azureSettingsFromFlags(flags) : undefined;
    const timings = {
      leaseDurationMs: flags.leaderElectLeaseDuration,
      renewDeadlineMs: flags.leaderElectRenewDeadline,
      retryPeriodMs: flags.leaderElectRetryPeriod,
    };
    if (flags.leaderElect) validateTimings(timings);
    const config = makeFulfillerConfig({
      namespace: flags.namespace,
      subnet: (flags.subnet ?? ['10.240.0.0/16'])[0]!,
      subnets: flags.subnet ?? ['10.240.0.0/16'],
      ...(flags.subnetName !== undefined ? { subnetName: flags.subnetName } : {}),
      scaler: {
        batchSize: flags.batch,
        requestThresholdPercent: flags.requestThreshold,
        releaseThresholdPercent: flags.releaseThreshold,
        maxIPCount: flags.max,
      },
      exhaustionThreshold: flags.exhaustionThreshold ?? flags.batch,
      recoveryMargin: flags.batch,
      exhaustionHoldMs: flags.exhaustionHold * 1000,
      quarantineMs: flags.quarantine * 1000,
      workers: flags.workers,
      ...(flags.nodeSelector !== undefined ? { nodeSelector: flags.nodeSelector } : {}),
    });
    const [{ startFulfiller }, { loadKubeConfig }, { createLogger }, setup] = await Promise.all([
      import('../fulfiller/run.ts'),
      import('../kube/config.ts'),
      import('../log/logger.ts'),
      azure ? import('../azure/setup.ts') : undefined,
    ]);
    const { kc, source, connections } = loadKubeConfig(
      flags.kubeconfig !== undefined ? { kubeconfig: flags.kubeconfig } : {},
    );
    const logger = createLogger({ level: flags.logLevel });
    logger.info('fulfiller starting', {
      component: 'fulfiller',
      kubeconfig: source,
      server: kc.getCurrentCluster()?.server,
      namespace: config.namespace,
      backend: flags.backend,
      ...(azure
        ? {
            podSubnetId: azure.podSubnetId ?? "none: each NIC's own subnet",
            armEndpoint: azure.endpoint ?? 'default',
            credential: azure.tokenFile ? 'token file' : 'DefaultAzureCredential',
            azureQps: azure.qps,
            azureBurst: azure.burst,
            azureReadQps: azure.readQps,
            azureReadBurst: azure.readBurst,
          }
        : { subnet: (config.subnets ?? [config.subnet]).join(',') }),
    });
    const running = await startFulfiller({
      kc,
      config,
      logger,
      ...(azure && setup ? { backend: setup.azureBackendFactory(azure) } : {}),
      listen: flags.listen,
      leaderElection: flags.leaderElect ? timings : false,
    });
    await new Promise<void>((resolve) => {
      const stop = (): void => {
        process.off('SIGINT', stop);
        process.off('SIGTERM', stop);
        void running
          .stop()
          .then(() => connections.destroy())
          .then(resolve);
      };
      process.on('SIGINT', stop);
      process.on('SIGTERM', stop);
    });
    // No logger.end(): a late debug line after end() would crash the exit;
    // stdout is flushed as the process ends on its own.
  });
}
