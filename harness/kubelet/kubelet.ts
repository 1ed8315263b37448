// The simulated kubelet/CNI of one node. For every pod bound to the node
// (not finished) it asks the sidecar for an IP, retrying with backoff while
// the pool has none (ReturnCode 32), then marks the pod Running with that IP.
// When the pod completes or is deleted it gives the IP back - unless told to
// drop that CNI DEL now and then (`dropReleaseRate`), as a crashed runtime or
// a node reboot does: a leak for the sidecar to reclaim. It measures each
// pod's wait from scheduling to the CNI answer that gave it its IP (the
// sidecar's pool_monitor_pod_ip_wait_seconds and simulate's pod wait use the
// same definition; the status write after it is not part of the wait). A
// host-network pod needs no IP from the
// pool: it runs with the node's own address, as on a real node.
//
// Pure of Kubernetes: pod events come in through onPod/onPodDeleted (an
// informer adapter feeds them), status writes go out through PodStatusWriter,
// and IPAM through CniClient, so it is tested against fakes and real HTTP.
import type { V1Pod } from '@kubernetes/client-node';
import type { Logger } from '../../src/log/logger.ts';
import { silentLogger } from '../../src/log/logger.ts';
import { backoffDelay, type BackoffOptions } from '../../src/kube/backoff.ts';
import { systemClock, type Clock } from '../../src/clock/clock.ts';
import { Slots } from '../../src/sim/slots.ts';
import { ANNOTATION_SCHEDULED_AT } from '../workload/pod.ts';
import type { CniClient, PodRef } from './cni.ts';
import { errorText } from '../../src/log/error-text.ts';

export type StatusWriteResult = 'ok' | 'gone' | 'finished';

export interface PodStatusWriter {
  /**
   * Marks the pod Running with `ips`. 'finished': the pod completed meanwhile
   * (no Running written); 'gone': it no longer exists. Throws on failures
   * worth retrying.
   */
  setRunning(pod: V1Pod, ips: string[]): Promise<StatusWriteResult>;
}

export interface KubeletCounters {
  podsSeen: number;
  ipRequests: number;
  /** Answers with ReturnCode 32: the pool had no Available IP. */
  noIpAnswers: number;
  ipsAssigned: number;
  releases: number;
  /** CNI DELs dropped on purpose (dropReleaseRate): leaked IPs. */
  releasesDropped: number;
  statusWrites: number;
  errors: number;
  /** Pods that got no IP because of a permanent failure. */
  podsFailed: number;
}

export interface PodWait {
  namespace: string;
  name: string;
  node: string;
  scheduledAt: number;
  /** When the CNI request that got the pod's address was answered. */
  ipAt: number;
  runningAt: number;
  /**
   * Scheduling to the CNI request that got its address: the definition the
   * sidecar's pool_monitor_pod_ip_wait_seconds and simulate's pod wait use.
   */
  waitMs: number;
  ips: string[];
}

/** A pod that ended (completed or deleted) before it ran: how long it had waited for its IP. */
export interface PodEndedWaiting {
  namespace: string;
  name: string;
  node: string;
  waitedMs: number;
}

export interface SimKubeletOptions {
  nodeName: string;
  cni: CniClient;
  writer: PodStatusWriter;
  /** Time and waits (tests run on a virtual clock). */
  clock?: Pick<Clock, 'now' | 'sleep'>;
  /** IPAM and status calls in flight at most; default 8. */
  concurrency?: number;
  /** Retry delays while no IP is available or a call fails. */
  backoff?: BackoffOptions;
  /** Attempts to release an IP before giving up (logged); default 8. */
  releaseAttempts?: number;
  random?: () => number;
  logger?: Logger;
  /** Told when a pod is Running with its IP. Must not throw. */
  onRunning?: (wait: PodWait) => void;
  /** Told when a pod ends before it ran (not when the kubelet stops). Must not throw. */
  onEndedWaiting?: (ended: PodEndedWaiting) => void;
  /** The node's InternalIP: host-network pods run with it; without it they are ignored. */
  nodeIp?: string;
  /** Share (0-1) of CNI DELs never sent, drawn with `random`: simulated leaks. Default 0. */
  dropReleaseRate?: number;
}

/** A CNI DEL the kubelet dropped: the pod's IPs stay Assigned in the sidecar's store. */
export interface DroppedRelease {
  namespace: string;
  name: string;
  ips: string[];
  why: 'completed' | 'deleted';
}

export const DEFAULT_KUBELET_BACKOFF: BackoffOptions = { initialMs: 100, maxMs: 3000, jitter: 0.3 };

type TrackState = 'setting-up' | 'running' | 'releasing' | 'released' | 'failed';

interface PodTrack {
  key: string;
  ref: PodRef;
  pod: V1Pod;
  scheduledAt: number;
  state: TrackState;
  /** An IP request was sent: release must be called even if no answer came. */
  requested: boolean;
  /** The IPs the sidecar answered with. */
  ips?: string[];
  abort: AbortController;
  setup?: Promise<void>;
  release?: Promise<void>;
}

const TERMINAL = new Set(['Succeeded', 'Failed']);

/** The pod's scheduling time: the workload's ms annotation, else creationTimestamp, else `fallback`. */
export function scheduledAt(pod: V1Pod, fallback: number): number {
  const stamp = Number(pod.metadata?.annotations?.[ANNOTATION_SCHEDULED_AT]);
  if (Number.isFinite(stamp) && stamp > 0) return stamp;
  const created = pod.metadata?.creationTimestamp;
  const t =
    created instanceof Date ? created.getTime() : created ? Date.parse(String(created)) : NaN;
  return Number.isFinite(t) ? t : fallback;
}

function podKey(pod: V1Pod): string {
  return pod.metadata?.uid ?? `${pod.metadata?.namespace ?? 'default'}/${pod.metadata?.name ?? ''}`;
}

export class SimKubelet {
  readonly counters: KubeletCounters = {
    podsSeen: 0,
    ipRequests: 0,
    noIpAnswers: 0,
    ipsAssigned: 0,
    releases: 0,
    releasesDropped: 0,
    statusWrites: 0,
    errors: 0,
    podsFailed: 0,
  };
  readonly waits: PodWait[] = [];
  /** Every CNI DEL dropped so far. */
  readonly dropped: DroppedRelease[] = [];
  private readonly o: Required<Omit<SimKubeletOptions, 'onRunning' | 'onEndedWaiting' | 'nodeIp'>> &
    Pick<SimKubeletOptions, 'onRunning' | 'onEndedWaiting' | 'nodeIp'>;
  private readonly log: Logger;
  private readonly slots: Slots;
  private readonly tracks = new Map<string, PodTrack>();
  /** Host-network pods started (or being started), by key. */
  private readonly hostPods = new Map<string, Promise<void>>();
  private stopped = false;

  constructor(options: SimKubeletOptions) {
    this.o = {
      clock: systemClock,
      concurrency: 8,
      backoff: DEFAULT_KUBELET_BACKOFF,
      releaseAttempts: 8,
      dropReleaseRate: 0,
      random: Math.random,
      logger: silentLogger(),
      ...options,
    };
    this.log = this.o.logger.child({ component: 'sim-kubelet', node: this.o.nodeName });
    this.slots = new Slots(this.o.concurrency);
  }

  /** Pods this kubelet is setting up (waiting for an IP). */
  waitingPods(): number {
    let n = 0;
    for (const t of this.tracks.values()) if (t.state === 'setting-up') n += 1;
    return n;
  }

  /** Pods Running with an IP from this kubelet. */
  runningPods(): number {
    let n = 0;
    for (const t of this.tracks.values()) if (t.state === 'running') n += 1;
    return n;
  }

  /** An added or updated pod, from the informer. */
  onPod(pod: V1Pod): void {
    if (this.stopped) return;
    if (pod.spec?.nodeName !== this.o.nodeName) return;
    const key = podKey(pod);
    const finished =
      TERMINAL.has(pod.status?.phase ?? '') || Boolean(pod.metadata?.deletionTimestamp);
    if (pod.spec?.hostNetwork === true) {
      if (!finished && this.o.nodeIp && !this.hostPods.has(key)) {
        this.hostPods.set(key, this.startHostPod(pod, this.o.nodeIp));
      }
      return;
    }
    let track = this.tracks.get(key);
    if (!track) {
      // A pod first seen already finished never held an IP from us: nothing to do.
      if (finished) return;
      track = {
        key,
        ref: {
          podName: pod.metadata?.name ?? '',
          podNamespace: pod.metadata?.namespace ?? 'default',
          podUid: pod.metadata?.uid ?? key,
        },
        pod,
        scheduledAt: scheduledAt(pod, this.o.clock.now()),
        state: 'setting-up',
        requested: false,
        abort: new AbortController(),
      };
      this.tracks.set(key, track);
      this.counters.podsSeen += 1;
      const t = track;
      t.setup = this.setUp(t).catch((err: unknown) => this.unexpected(t, err));
      return;
    }
    track.pod = pod;
    if (finished) this.startRelease(track, 'completed');
  }

  /** A deleted pod, from the informer. */
  onPodDeleted(pod: V1Pod): void {
    const key = podKey(pod);
    const host = this.hostPods.get(key);
    if (host) void host.then(() => this.hostPods.delete(key));
    const track = this.tracks.get(key);
    if (!track) return;
    this.startRelease(track, 'deleted');
    void track.release?.then(() => {
      if (this.tracks.get(key) === track) this.tracks.delete(key);
    });
  }

  /** Stops setting up pods; waits for in-flight work. IPs of running pods stay assigned. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const t of this.tracks.values()) t.abort.abort();
    await Promise.all([
      ...[...this.tracks.values()].flatMap((t) => [t.setup, t.release]),
      ...this.hostPods.values(),
    ]);
  }

  /** A host-network pod: Running with the node's address, no IPAM call. */
  private async startHostPod(pod: V1Pod, ip: string): Promise<void> {
    const name = `${pod.metadata?.namespace ?? 'default'}/${pod.metadata?.name ?? ''}`;
    for (let attempt = 0; !this.stopped; attempt += 1) {
      try {
        await this.withSlot(() => this.o.writer.setRunning(pod, [ip]));
        this.counters.statusWrites += 1;
        this.log.debug('host-network pod running', { pod: name, ip });
        return;
      } catch (err) {
        this.counters.errors += 1;
        this.log.warn('pod status write retry', {
          pod: name,
          attempt: attempt + 1,
          error: errorText(err),
        });
        await this.o.clock.sleep(backoffDelay(attempt, this.o.backoff, this.o.random));
      }
    }
  }

  private unexpected(track: PodTrack, err: unknown): void {
    this.counters.errors += 1;
    this.log.error('pod setup crashed', {
      pod: `${track.ref.podNamespace}/${track.ref.podName}`,
      error: errorText(err),
    });
  }

  private async withSlot<T>(fn: () => Promise<T>): Promise<T> {
    await this.slots.acquire();
    try {
      return await fn();
    } finally {
      this.slots.release();
    }
  }

  private async setUp(track: PodTrack): Promise<void> {
    const { clock, cni, writer, backoff, random } = this.o;
    const signal = track.abort.signal;
    const pod = `${track.ref.podNamespace}/${track.ref.podName}`;
    let ips: string[] | undefined;
    for (let attempt = 0; !signal.aborted; attempt += 1) {
      track.requested = true;
      this.counters.ipRequests += 1;
      const answer = await this.withSlot(() => cni.requestIp(track.ref));
      if (answer.kind === 'ok' && answer.ips.length > 0) {
        ips = answer.ips;
        break;
      }
      if (answer.kind === 'no-ip') {
        this.counters.noIpAnswers += 1;
        if (attempt === 0) this.log.info('pod waiting for an IP', { pod, message: answer.message });
      } else {
        this.counters.errors += 1;
        const retryable = answer.kind === 'error' ? answer.retryable : false;
        const message = answer.kind === 'error' ? answer.message : 'answer without an IP';
        // Ended by the workload meanwhile: the refusal may be of the pod's end.
        if (signal.aborted) break;
        if (!retryable) {
          this.counters.podsFailed += 1;
          track.state = 'failed';
          this.log.error('pod IP request failed', { pod, error: message });
          return;
        }
        this.log.warn('pod IP request retry', { pod, attempt: attempt + 1, error: message });
      }
      await clock.sleep(backoffDelay(attempt, backoff, random), signal);
    }
    if (!ips || signal.aborted) return this.endedWaiting(track);
    const ipAt = clock.now();
    this.counters.ipsAssigned += 1;
    track.ips = ips;

    for (let attempt = 0; !signal.aborted; attempt += 1) {
      try {
        const result = await this.withSlot(() => writer.setRunning(track.pod, ips));
        this.counters.statusWrites += 1;
        if (result !== 'ok') {
          this.startRelease(track, result === 'gone' ? 'deleted' : 'completed');
          return this.endedWaiting(track);
        }
        break;
      } catch (err) {
        this.counters.errors += 1;
        this.log.warn('pod status write retry', {
          pod,
          attempt: attempt + 1,
          error: errorText(err),
        });
        await clock.sleep(backoffDelay(attempt, backoff, random), signal);
      }
    }
    if (signal.aborted) return this.endedWaiting(track);
    track.state = 'running';
    const runningAt = clock.now();
    const wait: PodWait = {
      namespace: track.ref.podNamespace,
      name: track.ref.podName,
      node: this.o.nodeName,
      scheduledAt: track.scheduledAt,
      ipAt,
      runningAt,
      waitMs: Math.max(0, ipAt - track.scheduledAt),
      ips,
    };
    this.waits.push(wait);
    this.log.debug('pod running', { pod, ips, waitMs: wait.waitMs });
    this.o.onRunning?.(wait);
  }

  /** A pod the workload ended before it ran; a stopping kubelet's pods are not counted. */
  private endedWaiting(track: PodTrack): void {
    if (this.stopped) return;
    this.o.onEndedWaiting?.({
      namespace: track.ref.podNamespace,
      name: track.ref.podName,
      node: this.o.nodeName,
      waitedMs: Math.max(0, this.o.clock.now() - track.scheduledAt),
    });
  }

  /** Stops the setup, waits for it, then releases the IP (idempotent). */
  private startRelease(track: PodTrack, why: 'completed' | 'deleted'): void {
    if (track.release) return;
    track.abort.abort();
    track.release = (async () => {
      await track.setup;
      track.state = 'releasing';
      if (
        track.requested &&
        this.o.dropReleaseRate > 0 &&
        this.o.random() < this.o.dropReleaseRate
      ) {
        this.counters.releasesDropped += 1;
        const { podNamespace: namespace, podName: name } = track.ref;
        this.dropped.push({ namespace, name, ips: track.ips ?? [], why });
        this.log.info('CNI DEL dropped (simulated leak)', { pod: `${namespace}/${name}`, why });
      } else if (track.requested) await this.releaseWithRetry(track, why);
      // A completed pod stays known until deleted, so its later updates change nothing.
      track.state = 'released';
    })().catch((err: unknown) => this.unexpected(track, err));
  }

  private async releaseWithRetry(track: PodTrack, why: string): Promise<void> {
    const pod = `${track.ref.podNamespace}/${track.ref.podName}`;
    for (let attempt = 0; attempt < this.o.releaseAttempts; attempt += 1) {
      const answer = await this.withSlot(() => this.o.cni.releaseIp(track.ref));
      if (answer.kind === 'ok') {
        this.counters.releases += 1;
        this.log.debug('pod IP released', { pod, why });
        return;
      }
      this.counters.errors += 1;
      const last =
        attempt + 1 >= this.o.releaseAttempts || (answer.kind === 'error' && !answer.retryable);
      this.log[last ? 'error' : 'warn'](last ? 'pod IP release failed' : 'pod IP release retry', {
        pod,
        attempt: attempt + 1,
        error: answer.message,
      });
      // After stop() one attempt only, so shutdown stays quick.
      if (last || this.stopped) return;
      await this.o.clock.sleep(backoffDelay(attempt, this.o.backoff, this.o.random));
    }
  }
}
