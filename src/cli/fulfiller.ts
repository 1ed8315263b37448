// `pool-monitor fulfiller`: the control-plane side that makes every NNC's
// status follow its spec, allocating from a pod subnet (CIDR backend). Runs
// until SIGINT/SIGTERM, then finishes actions in progress and exits 0.
import { Command, InvalidArgumentError } from 'commander';
import { makeFulfillerConfig } from '../fulfiller/config.ts';
import { parseCidr } from '../fulfiller/cidr.ts';
import { LOG_LEVELS, type LogLevel } from '../log/levels.ts';
import { DEFAULT_NAMESPACE } from '../nnc/types.ts';
import { integerOption } from './parse.ts';

interface FulfillerFlags {
  kubeconfig?: string;
  namespace: string;
  subnet: string;
  subnetName?: string;
  batch: number;
  requestThreshold: number;
  releaseThreshold: number;
  max: number;
  exhaustionThreshold?: number;
  exhaustionHold: number;
  workers: number;
  logLevel: LogLevel;
}

function cidrOption(value: string): string {
  try {
    return parseCidr(value).text;
  } catch (err) {
    throw new InvalidArgumentError((err as Error).message);
  }
}

function logLevelOption(value: string): LogLevel {
  if (!(LOG_LEVELS as readonly string[]).includes(value)) {
    throw new InvalidArgumentError(`must be one of ${LOG_LEVELS.join(', ')}`);
  }
  return value as LogLevel;
}

export function fulfillerCommand(): Command {
  return new Command('fulfiller')
    .description(
      'Make every NodeNetworkConfig status follow its spec, allocating pod IPs from a subnet',
    )
    .option('--kubeconfig <file>', 'kubeconfig file (default: $KUBECONFIG, then in-cluster)')
    .option('--namespace <ns>', 'namespace of the NNCs and CSSs', DEFAULT_NAMESPACE)
    .option('--subnet <cidr>', 'pod subnet to allocate from', cidrOption, '10.240.0.0/16')
    .option('--subnet-name <name>', 'subnet and ClusterSubnetState name (default: from the CIDR)')
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
    .option('--log-level <level>', `one of ${LOG_LEVELS.join(', ')}`, logLevelOption, 'info')
    .action(async (flags: FulfillerFlags) => {
      const config = makeFulfillerConfig({
        namespace: flags.namespace,
        subnet: flags.subnet,
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
        workers: flags.workers,
      });
      const [{ startFulfiller }, { loadKubeConfig }, { createLogger }] = await Promise.all([
        import('../fulfiller/run.ts'),
        import('../kube/config.ts'),
        import('../log/logger.ts'),
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
        subnet: config.subnet,
      });
      const running = startFulfiller({ kc, config, logger });
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
