// The previous leader's last writes (docs/decisions/0022-fencing-the-previous-leaders-late-writes.md).
// A status write the old leader sent before its renew deadline can still be
// applied after the handover: kube-apiserver answers 504 at its request
// timeout while the handler goes on ("post-timeout activity"), and a write
// queued by priority and fairness or slow etcd waits before it is applied.
// Every status write carries its resourceVersion precondition, so a late
// write lands only on the very version it was based on. So, for each NNC of
// the new term's fresh list, one of these ends the danger:
//   - a newer version of it is read (the late write landed and is seen, or
//     the NNC moved and the write's precondition can never hold again), or
//   - it is deleted, or
//   - the API server's request timeout has passed since the term began: a
//     write sent before the Lease changed hands is over by then.
// Until then, an address taken for another NNC might be the one a late write
// puts on this one: a new address is only handed to node X while every NNC
// but X is fenced (X's own write is fenced by its own precondition).
// Pure: versions and time are passed in.

export interface FencedView {
  /** The newest resourceVersion read of an NNC, undefined once it is deleted. */
  version(name: string): bigint | undefined;
}

export class TermFence {
  // In listing order. An entry leaves once it is seen fenced, never to come
  // back, so what a question walks past is paid for once per term: a round
  // for one node of 5,000 asks about a few NNCs, not all of them.
  private readonly open: Map<string, bigint>;
  readonly until: number;

  /** `listed`: each NNC's resourceVersion in the term's fresh list. */
  constructor(listed: Iterable<[string, bigint]>, startedAt: number, requestTimeoutMs: number) {
    this.open = new Map(listed);
    this.until = startedAt + requestTimeoutMs;
  }

  /** False once the request timeout has passed (everything is fenced then). */
  private standing(now: number): boolean {
    if (now < this.until) return true;
    this.open.clear();
    return false;
  }

  /** Whether the entry `name` is still open, dropping it when it is not. */
  private stillOpen(view: FencedView, name: string, listedRv: bigint): boolean {
    const rv = view.version(name);
    if (rv === undefined || rv > listedRv) {
      this.open.delete(name);
      return false;
    }
    return true;
  }

  /** Whether this NNC may still receive a write of the previous term. */
  isOpen(view: FencedView, now: number, name: string): boolean {
    const listedRv = this.open.get(name);
    if (!this.standing(now) || listedRv === undefined) return false;
    return this.stillOpen(view, name, listedRv);
  }

  /**
   * The first open NNCs but `except`, at most `limit` + 1 of them: enough to
   * tell "none", "at most `limit`" and "more" apart without reading them all.
   */
  openBeyond(view: FencedView, now: number, except: string | undefined, limit: number): string[] {
    const out: string[] = [];
    if (!this.standing(now)) return out;
    for (const [name, listedRv] of this.open) {
      if (!this.stillOpen(view, name, listedRv) || name === except) continue;
      out.push(name);
      if (out.length > limit) break;
    }
    return out;
  }

  /** Every NNC that may still receive a write of the previous term (the target excepted). */
  unfenced(view: FencedView, now: number, target?: string): string[] {
    return this.openBeyond(view, now, target, Infinity);
  }

  /** Why a new address for `target` waits, or undefined. */
  waitReason(view: FencedView, now: number, target?: string): string | undefined {
    const open = this.openBeyond(view, now, target, 3);
    if (open.length === 0) return undefined;
    // Entries not walked to yet may have moved: the count is an upper bound.
    const most = this.open.size - (target !== undefined && this.open.has(target) ? 1 : 0);
    const shown = open.slice(0, 3).join(', ') + (open.length > 3 ? ', ...' : '');
    return `up to ${most} NodeNetworkConfig(s) (${shown}) may still receive a status write the previous leader sent; new addresses wait until each is read at a newer version or ${Math.ceil((this.until - now) / 1000)} s have passed`;
  }

  get done(): boolean {
    return this.open.size === 0;
  }
}
