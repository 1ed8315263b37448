// What `bin/pool-monitor embedded` takes: the options (from the command
// line) and the run's input and output (terminal, signal, where scratch
// goes), with the defaults that depend on the cluster's size.
import type { LogLevel } from '../../src/log/logger.ts';
import type { ProgressStream } from '../../src/sim/report/progress.ts';
import type { EmbeddedAzureLayout, EmbeddedBackend } from './azure-report.ts';
import type { ChaosOptions } from './chaos/chaos.ts';
import type { IpFamilyChoice } from './ip-family.ts';

export const DEFAULT_POD_SUBNET = '10.240.0.0/16';

export interface EmbeddedOptions {
  /** Built-in scenario name or YAML/JSON file. */
  scenario: string;
  /** Overrides the scenario's node count. */
  nodes?: number;
  /** Overrides the scenario's duration, seconds. */
  durationSeconds?: number;
  /** 0: ephemeral. */
  apiPort: number;
  serve: boolean;
  reportFile?: string;
  logLevel: LogLevel;
  /** Sampling interval; default 1 s, longer for big clusters. */
  sampleMs?: number;
  /** Kubernetes Events from the components (default true). */
  events?: boolean;
  /** The API server serves HTTPS with a CA made at start (in the kubeconfig). */
  tls?: boolean;
  /** Where the component log goes; default a new file in the user's state dir (log-place.ts). */
  logFile?: string;
  /** Share of CNI DELs the kubelets drop; overrides the scenario's leaks.dropReleaseRate. */
  leakRate?: number;
  /** The fulfiller's backend: cidr (default) or azure (the ARM emulator, azure.ts). */
  backend?: EmbeddedBackend;
  /** With the azure backend: the emulated VMs' layout (default mixed). */
  azureLayout?: EmbeddedAzureLayout;
  /** With the azure backend: ARM's operation times (azure.ts; default fast, a second). */
  azureTiming?: 'fast' | 'realistic';
  /** With the azure backend: cloud-provider-azure's stale NIC writes and scale-set reimages (azure.ts). */
  azureOtherWriters?: boolean;
  /** Fail writes, drop watches, compact history, kill -9 the components (harness/embedded/chaos/). */
  chaos?: ChaosOptions;
  /**
   * Real networks (root): each node a network namespace, each pod one with
   * the macvlan plugin and pool-monitor-cni run for it (node-networks.ts).
   */
  netns?: boolean;
  /**
   * The pods' address families (default ipv4): the fulfiller serves the
   * scenario's IPv4 subnet, an IPv6 one as large (ip-family.ts), or both.
   */
  ipFamily?: IpFamilyChoice;
}

export interface EmbeddedIo {
  /** Human output (URL, progress, report). */
  out: ProgressStream & { write(text: string): unknown };
  /** Violations and errors. */
  err: { write(text: string): unknown };
  /** Ends the run early (or, with serve, after the scenario). */
  signal?: AbortSignal;
  /** Parent of the run directory (default the OS temp dir). */
  tmpRoot?: string;
  /** Environment for the default log place (default process.env). */
  env?: Record<string, string | undefined>;
}

/** Sampling interval by size: 1 s up to 200 nodes, then slower so sampling stays cheap. */
export function defaultSampleMs(nodes: number): number {
  return nodes <= 200 ? 1000 : Math.min(5000, Math.ceil(nodes / 200) * 1000);
}
