// What users feel in a `simulate` run: every unit of demand is a pod that
// needs one IP. A pod created while the node has no free allocated IP waits,
// first come first served, until one is free (an IP the control plane added
// after the fulfil delay, or one a finished pod gave back). Its wait, from
// creation to the CNI request that got its address, is what the summary's
// podWait figures and the sidecar's pool_monitor_pod_ip_wait_seconds report.
import { NoAvailableIpError, type NodeIpStore } from '../ipstore/types.ts';

interface WaitingPod {
  name: string;
  createdAt: number;
  /** Its first CNI request was refused (no free IP). */
  refused: boolean;
}

export class PodModel {
  /** Seconds each placed pod waited, in the order they got their IP. */
  readonly waitsSeconds: number[] = [];
  /** Pods whose first CNI request was refused for want of a free IP. */
  refusals = 0;
  private readonly store: NodeIpStore;
  private readonly now: () => number;
  private readonly running: string[] = [];
  private readonly waiting: WaitingPod[] = [];
  private created = 0;

  /** `now` in ms. */
  constructor(store: NodeIpStore, now: () => number) {
    this.store = store;
    this.now = now;
  }

  /** Pods that want an IP and have none. */
  waitingCount(): number {
    return this.waiting.length;
  }

  runningCount(): number {
    return this.running.length;
  }

  /**
   * Demand moves to `demand`: new pods queue up; when it falls, running pods
   * finish first (a pod that never got an IP cannot have run), most recent first.
   */
  setDemand(demand: number): void {
    const wanted = Math.max(0, Math.floor(demand));
    while (this.running.length + this.waiting.length < wanted) {
      this.created += 1;
      this.waiting.push({ name: `pod-${this.created}`, createdAt: this.now(), refused: false });
    }
    while (this.running.length + this.waiting.length > wanted) {
      const pod = this.running.pop();
      if (pod !== undefined) this.store.release(pod);
      else this.waiting.pop();
    }
    this.place();
  }

  /** Gives waiting pods an IP while the store has one free, oldest first. */
  place(): void {
    while (this.waiting.length > 0) {
      const pod = this.waiting[0] as WaitingPod;
      try {
        this.store.assign({
          podInterfaceID: pod.name,
          infraContainerID: pod.name,
          podName: pod.name,
          podNamespace: 'sim',
        });
      } catch (err) {
        if (err instanceof NoAvailableIpError) {
          for (const p of this.waiting) {
            if (!p.refused) this.refusals += 1;
            p.refused = true;
          }
          return;
        }
        throw err;
      }
      this.waiting.shift();
      this.running.push(pod.name);
      this.waitsSeconds.push(Math.max(0, this.now() - pod.createdAt) / 1000);
    }
  }
}
