// `pool-monitor sidecar`: the node agent as a process. Flags and environment
// are resolved and validated first (one clear line and exit 1 when bad), then
// runSidecar runs until SIGTERM/SIGINT, after which everything is shut down
// cleanly and the process exits 0.
import { Command } from 'commander';
import { resolveSidecarOptions, type SidecarFlags } from '../sidecar/options.ts';
import { withEnvFallbacks } from './env-flags.ts';
import { untilSignal } from './signals.ts';

export function sidecarCommand(): Command {
  const command = new Command('sidecar')
    .description("Run the node agent: keep this node's pod IP pool the right size")
    .option('--node-name <node>', 'this node (default: $NODENAME)')
    .option('--kubeconfig <file>', 'kubeconfig (default: $KUBECONFIG, else in-cluster)')
    .option('--namespace <ns>', 'namespace of the NNC and CSS objects', 'kube-system')
    .option('--state-dir <dir>', 'directory of the durable IP store', '/var/lib/pool-monitor')
    .option(
      '--listen <host:port|unix:path>',
      'node API address, HOST an IP or localhost, or a unix socket (default: 127.0.0.1:10092)',
    )
    .option('--listen-group <gid>', "the unix socket's group (mode 0660)")
    .option(
      '--metrics-listen <host:port>',
      'also serve /metrics alone here, for a cluster Prometheus (default: off)',
    )
    .option(
      '--health-listen <host:port>',
      'also serve /healthz and /readyz alone here, for the kubelet (default: off)',
    )
    .option(
      '--node-api-token-file <file>',
      'require this bearer token on the IPAM and /debug/ipaddresses endpoints',
    )
    .option('--log-level <level>', 'log level: error, warn, info or debug', 'info')
    .option(
      '--subnet-state <mode>',
      '"name": the CSS of the node\'s subnet; "any": any CSS',
      'name',
    )
    .option(
      '--release-delay <seconds|auto>',
      "hold a lower target this long before releasing, or auto (learns from the node's demand)",
      '0',
    )
    .option(
      '--idle-budget <ratio>',
      'with --release-delay auto: idle IP-seconds allowed, as a multiple of what CNS v2 would hold',
      '1.5',
    )
    .option(
      '--leak-grace <seconds>',
      'release an Assigned IP once its pod has been gone (or finished) this long',
      '60',
    )
    .option(
      '--schedule-signal <true|false>',
      'taint this node NoSchedule while it cannot give another pod an address',
      'true',
    )
    .option('--dry-run', 'compute and log, never mark IPs or write the NNC');
  return withEnvFallbacks(command).action(async (flags: SidecarFlags) => {
    const options = resolveSidecarOptions(flags, process.env);
    // Before anything loads @kubernetes/client-node (docs/decisions/0026).
    (await import('../kube/lean/hooks.ts')).useLeanKubeClient();
    const [{ runSidecar }, { createLogger }] = await Promise.all([
      import('../sidecar/run.ts'),
      import('../log/logger.ts'),
    ]);
    const logger = createLogger({ level: options.logLevel });
    const signalled = untilSignal();
    const sidecar = await runSidecar(options, { logger });
    const sig = await signalled;
    logger.info('signal received, shutting down', { component: 'main', signal: sig });
    await sidecar.stop();
    logger.end();
    // Sockets a client library keeps alive must not hold the exit back.
    setTimeout(() => process.exit(process.exitCode ?? 0), 1000).unref();
  });
}
