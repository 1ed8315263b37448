// The sidecar's configuration: flags first, then the environment (NODENAME,
// KUBECONFIG), validated in one place so a bad value fails at start with one
// clear line and nothing else happens.
import { isIP } from 'node:net';
import { isAbsolute } from 'node:path';
import { readTokenFile } from '../secrets/token-file.ts';
import { LOG_LEVELS, type LogLevel } from '../log/levels.ts';
import { DEFAULT_NAMESPACE } from '../nnc/types.ts';
import { parseReleaseDelay, type ReleaseDelay } from '../scaling/release-delay-value.ts';
import { DEFAULT_IDLE_BUDGET, parseIdleBudget } from '../scaling/idle-budget-value.ts';

export type SubnetStateMode = 'name' | 'any';

export interface SidecarOptions {
  nodeName: string;
  /** Absent: in-cluster configuration. */
  kubeconfig?: string;
  namespace: string;
  stateDir: string;
  listenHost: string;
  listenPort: number;
  /** --listen unix:PATH: the node API on this socket (0660) instead of TCP. */
  listenSocket?: string;
  /** --listen-group: the socket's group (gid). */
  listenGroup?: number;
  /** --metrics-listen: /metrics alone on this address too (off when absent). */
  metricsListen?: { host: string; port: number };
  /** --health-listen: /healthz and /readyz alone on this address too (off when absent). */
  healthListen?: { host: string; port: number };
  /** --node-api-token-file: its token is needed on the IPAM and pod-identity endpoints. */
  nodeApiTokenFile?: string;
  logLevel: LogLevel;
  subnetState: SubnetStateMode;
  /** Seconds (0: exactly CNS v2) or the adaptive policy. */
  releaseDelay: ReleaseDelay;
  /** With `auto`: idle IP-seconds allowed, as a multiple of CNS v2's (DEFAULT_IDLE_BUDGET when absent). */
  idleBudget?: number;
  /**
   * How long an Assigned IP's pod must be gone (or finished) before the IP
   * is reclaimed; DEFAULT_LEAK_GRACE_SECONDS when absent.
   */
  leakGraceSeconds?: number;
  /**
   * --schedule-signal: taint the node NoSchedule while it cannot give another
   * pod an address (docs/decisions/0035); absent means true.
   */
  scheduleSignal?: boolean;
  dryRun: boolean;
}

/** The flags as commander hands them over: strings, or absent. */
export interface SidecarFlags {
  nodeName?: string;
  kubeconfig?: string;
  namespace?: string;
  stateDir?: string;
  listen?: string;
  listenGroup?: string;
  metricsListen?: string;
  healthListen?: string;
  nodeApiTokenFile?: string;
  logLevel?: string;
  subnetState?: string;
  releaseDelay?: string;
  idleBudget?: string;
  leakGrace?: string;
  scheduleSignal?: string;
  dryRun?: boolean;
}

export const DEFAULT_LISTEN_PORT = 10092;
export const DEFAULT_STATE_DIR = '/var/lib/pool-monitor';
export const DEFAULT_LEAK_GRACE_SECONDS = 60;

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

/**
 * `HOST`, `HOST:PORT`, `:PORT` or `[v6]:PORT`; the host defaults to 127.0.0.1
 * and must be an IP address or `localhost` (as Kubernetes' --bind-address: a
 * name would need DNS at start and could bind somewhere unexpected).
 */
export function parseListen(value: string): { host: string; port: number } {
  const trimmed = value.trim();
  let host = trimmed;
  let portText: string | undefined;
  const v6 = /^\[([^\]]+)\](?::(.*))?$/.exec(trimmed);
  if (v6) {
    host = v6[1] as string;
    portText = v6[2];
  } else if (trimmed.includes(':')) {
    const at = trimmed.lastIndexOf(':');
    host = trimmed.slice(0, at);
    portText = trimmed.slice(at + 1);
  }
  if (host === '') host = '127.0.0.1';
  if (isIP(host) === 0 && host !== 'localhost') {
    throw new ConfigError(
      `--listen: "${value}" is not [HOST][:PORT] with HOST an IP address or localhost`,
    );
  }
  if (portText === undefined) return { host, port: DEFAULT_LISTEN_PORT };
  const port = Number(portText);
  if (!/^\d+$/.test(portText) || port > 65535) {
    throw new ConfigError(`--listen: port must be 0-65535, got "${portText}"`);
  }
  return { host, port };
}

/** A listener of its own (--health-listen): HOST:PORT, both given; absent or empty: off. */
function secondListener(
  flag: string,
  value: string | undefined,
): { host: string; port: number } | undefined {
  if (value === undefined || value === '') return undefined;
  if (!/:\d+$/.test(value.trim()))
    throw new ConfigError(
      `${flag}: "${value}" is not HOST:PORT with HOST an IP address or localhost`,
    );
  try {
    return parseListen(value);
  } catch (err) {
    throw new ConfigError((err as Error).message.replace(/^--listen/, flag));
  }
}

const DNS_LABELS = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

export function resolveSidecarOptions(
  flags: SidecarFlags,
  env: Record<string, string | undefined>,
): SidecarOptions {
  const nodeName = flags.nodeName ?? env.NODENAME;
  if (!nodeName) throw new ConfigError('--node-name is required (or set NODENAME)');
  if (nodeName.length > 253 || !DNS_LABELS.test(nodeName)) {
    throw new ConfigError(`--node-name: "${nodeName}" is not a valid Kubernetes node name`);
  }
  const namespace = flags.namespace ?? DEFAULT_NAMESPACE;
  if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(namespace) || namespace.length > 63) {
    throw new ConfigError(`--namespace: "${namespace}" is not a valid namespace name`);
  }
  const logLevel = (flags.logLevel ?? 'info') as LogLevel;
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError(
      `--log-level must be one of ${LOG_LEVELS.join(', ')}, got "${flags.logLevel}"`,
    );
  }
  const subnetState = (flags.subnetState ?? 'name') as SubnetStateMode;
  if (subnetState !== 'name' && subnetState !== 'any') {
    throw new ConfigError(`--subnet-state must be "name" or "any", got "${flags.subnetState}"`);
  }
  let releaseDelay: ReleaseDelay;
  try {
    releaseDelay = parseReleaseDelay(flags.releaseDelay ?? '0');
  } catch (err) {
    throw new ConfigError((err as Error).message);
  }
  let idleBudget: number;
  try {
    idleBudget = parseIdleBudget(flags.idleBudget ?? String(DEFAULT_IDLE_BUDGET));
  } catch (err) {
    throw new ConfigError((err as Error).message);
  }
  const graceText = flags.leakGrace ?? String(DEFAULT_LEAK_GRACE_SECONDS);
  const leakGraceSeconds = Number(graceText);
  if (graceText.trim() === '' || !Number.isFinite(leakGraceSeconds) || leakGraceSeconds < 0) {
    throw new ConfigError(`--leak-grace must be a number of seconds >= 0, got "${graceText}"`);
  }
  const signalText = flags.scheduleSignal ?? 'true';
  if (signalText !== 'true' && signalText !== 'false')
    throw new ConfigError(`--schedule-signal must be true or false, got "${signalText}"`);
  const stateDir = flags.stateDir ?? DEFAULT_STATE_DIR;
  if (stateDir.trim() === '') throw new ConfigError('--state-dir must not be empty');
  const listen = flags.listen ?? '127.0.0.1';
  const socket = listen.startsWith('unix:') ? listen.slice('unix:'.length) : undefined;
  if (socket !== undefined && !isAbsolute(socket))
    throw new ConfigError(`--listen: unix socket path must be absolute, got "${socket}"`);
  const { host, port } =
    socket === undefined ? parseListen(listen) : { host: '127.0.0.1', port: DEFAULT_LISTEN_PORT };
  let listenGroup: number | undefined;
  if (flags.listenGroup !== undefined) {
    if (socket === undefined) throw new ConfigError('--listen-group needs --listen unix:PATH');
    if (!/^\d+$/.test(flags.listenGroup) || Number(flags.listenGroup) > 0xfffffffe)
      throw new ConfigError(
        `--listen-group must be a numeric group id, got "${flags.listenGroup}"`,
      );
    listenGroup = Number(flags.listenGroup);
  }
  let metricsListen: { host: string; port: number } | undefined;
  if (flags.metricsListen !== undefined && flags.metricsListen !== '') {
    // HOST:PORT, both required: an address of its own, never the node API's default.
    if (!/:\d+$/.test(flags.metricsListen.trim()))
      throw new ConfigError(
        `--metrics-listen: "${flags.metricsListen}" is not HOST:PORT with HOST an IP address or localhost`,
      );
    try {
      metricsListen = parseListen(flags.metricsListen);
    } catch (err) {
      throw new ConfigError((err as Error).message.replace(/^--listen/, '--metrics-listen'));
    }
    if (socket === undefined && metricsListen.host === host && metricsListen.port === port)
      throw new ConfigError('--metrics-listen must differ from --listen');
  }
  const healthListen = secondListener('--health-listen', flags.healthListen);
  const same = (a: { host: string; port: number }, b: { host: string; port: number }) =>
    a.host === b.host && a.port === b.port;
  if (healthListen && socket === undefined && same(healthListen, { host, port }))
    throw new ConfigError('--health-listen must differ from --listen');
  if (healthListen && metricsListen && same(healthListen, metricsListen))
    throw new ConfigError('--health-listen must differ from --metrics-listen');
  if (flags.nodeApiTokenFile !== undefined) {
    try {
      readTokenFile(flags.nodeApiTokenFile);
    } catch (err) {
      throw new ConfigError(`--node-api-token-file: ${(err as Error).message}`);
    }
  }
  const kubeconfig = flags.kubeconfig ?? (env.KUBECONFIG || undefined);
  return {
    nodeName,
    ...(kubeconfig ? { kubeconfig } : {}),
    namespace,
    stateDir,
    listenHost: host,
    listenPort: port,
    ...(socket !== undefined ? { listenSocket: socket } : {}),
    ...(listenGroup !== undefined ? { listenGroup } : {}),
    ...(metricsListen !== undefined ? { metricsListen } : {}),
    ...(healthListen !== undefined ? { healthListen } : {}),
    ...(flags.nodeApiTokenFile !== undefined ? { nodeApiTokenFile: flags.nodeApiTokenFile } : {}),
    logLevel,
    subnetState,
    releaseDelay,
    idleBudget,
    leakGraceSeconds,
    scheduleSignal: signalText === 'true',
    dryRun: flags.dryRun ?? false,
  };
}
