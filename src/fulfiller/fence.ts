// The previous leader's last writes (docs/decisions/0022). A status write
// the old leader sent before its renew deadline can still be applied after
// the handover: kube-apiserver answers 504 at its request timeout while the
// handler goes on, and a write queued by priority and fairness or slow etcd
// waits before it is applied. Every status write carries its
// resourceVersion precondition, so a late write lands only on the very
// version it was based on. So each NNC the new term listed is fenced
// (node-book.ts `beginTerm`) until it is known past the version listed: an
// answer to a later request shows another version, the stream moves past
// it, it is deleted, or the API server's request timeout has passed since
// the term began. Until then a new address goes to node X only while every
// NNC but X is fenced (X's own write is fenced by its own precondition).
// This file is the term's part: its first write of every NNC it listed is a
// metadata-only patch of the leader-term annotation, which moves its
// resourceVersion, so that no write based on the listed version can land.
import { Backoff } from '../kube/backoff.ts';
import type { BackoffOptions } from '../kube/backoff.ts';
import { apiErrorInfo, isNotFound } from '../kube/errors.ts';
import type { Logger } from '../log/logger.ts';
import type { NodeBook } from './node-book.ts';
import { nextSeq } from './node-book.ts';
import type { NncLifecycleApi } from './ports.ts';

export interface FenceMarkDeps {
  book: NodeBook;
  lifecycleApi: NncLifecycleApi;
  log: Logger;
  workers: number;
  backoff: BackoffOptions;
  random?: () => number;
  /** The term's id, written on every NNC. */
  term: string;
  /** This term still runs and may write (false: stop at once). */
  current(): boolean;
  /** A retry's wait that the end of the term cuts short. */
  pause(ms: number): Promise<void>;
}

/**
 * Marks every NNC the fence holds open; one that fails stays fenced until
 * known past its listed version or the request timeout is over, and is
 * tried again with backoff while the fence stands.
 */
export async function markEveryNnc(d: FenceMarkDeps): Promise<void> {
  const backoff = new Backoff(d.backoff, d.random);
  let moved = 0;
  for (;;) {
    const names = d.book.fencedNames();
    if (names.length === 0 || !d.current()) break;
    const next = async (): Promise<void> => {
      for (let name = names.pop(); name !== undefined; name = names.pop()) {
        if (!d.current()) return;
        // Known past its listed version meanwhile (its own round's write): no mark owed.
        if (!d.book.isFenced(name)) continue;
        const sent = nextSeq();
        try {
          d.book.answered('nnc', name, await d.lifecycleApi.markTerm(name, d.term), sent);
          moved++;
        } catch (err) {
          if (isNotFound(err)) {
            d.book.answered('nnc', name, undefined, sent);
            continue;
          }
          d.log.warn('node network config not fenced', {
            node: name,
            error: apiErrorInfo(err).message,
          });
        }
      }
    };
    await Promise.all(Array.from({ length: d.workers }, next));
    if (d.book.fencedNames().length === 0 || !d.current()) break;
    await d.pause(backoff.next());
  }
  if (d.current()) d.log.info('previous term fenced', { moved, term: d.term });
}
