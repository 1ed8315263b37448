// The only code that sends a status (docs/decisions/0036): every write goes
// through the gate (status-gate.ts) first, is based on the version read
// (optimistic concurrency: 409 re-reads and recomputes), and its new
// addresses are held by the record from before it is sent until its answer
// is read. A write that fails without saying whether it landed (a 5xx, a
// timeout, a reset) leaves them held, in doubt, until the NNC is known past
// the version it was based on, or read at that version once the API
// server's request timeout has passed since (docs/design/fulfiller.md#high-availability):
// kube-apiserver answers 504 when its timeout fires while the write goes on
// to commit, and etcd's "request timed out" comes back as a 500 for a
// proposal that may still be applied.
import { apiErrorInfo, isNotFound } from '../kube/errors.ts';
import type { NodeNetworkConfig } from '../nnc/types.ts';
import { nextSeq } from './node-book.ts';
import type { RecordView } from './node-record.ts';
import { admit, type StatusProposal } from './status-gate.ts';
import { jsonEqual } from './status.ts';
import type { SyncContext } from './sync-context.ts';

/** What became of a write through the gate. */
export type WriteOutcome =
  /** Written; the answer. */
  | { kind: 'written'; nnc: NodeNetworkConfig; added: string[] }
  /** The status already is what the gate admits. */
  | { kind: 'unchanged' }
  /** A new container's primary IP is held elsewhere: nothing written, the node tried again when it is free. */
  | { kind: 'waiting' }
  /** The NNC changed since `base` (409), or is gone (404): read it again. */
  | { kind: 'conflict' };

/** Raised when the gate refuses a status (it would drop addresses the node has not let go). */
export class StatusRefusedError extends Error {
  override readonly name = 'StatusRefusedError';
}

/**
 * Writes `proposal` as the status of `record`'s NNC, based on `base`
 * (received at `baseSeen`), through the gate.
 */
export async function writeThroughGate(
  ctx: SyncContext,
  record: RecordView,
  base: NodeNetworkConfig,
  baseSeen: number,
  proposal: StatusProposal,
): Promise<WriteOutcome> {
  const name = base.metadata.name;
  const verdict = admit(ctx.book, record, base, proposal);
  if (verdict.kind === 'refuse') {
    ctx.metrics?.statusRefused('drop');
    ctx.log.error('status write refused: it would drop addresses the node has not let go', {
      node: name,
      addresses: verdict.dropped.slice(0, 5),
      count: verdict.dropped.length,
    });
    throw new StatusRefusedError(
      `${name}: the status would drop ${verdict.dropped.length} address(es) the node has not released`,
    );
  }
  noteWithheld(ctx, record, verdict.withheld);
  if (verdict.kind === 'wait') return { kind: 'waiting' };
  if (jsonEqual(verdict.status, base.status)) return { kind: 'unchanged' };
  const { added } = verdict;
  ctx.guard(); // no await between it and the request
  ctx.book.reserve(record, added);
  const sent = nextSeq();
  try {
    const written = await ctx.nncApi.replaceStatus({ ...base, status: verdict.status });
    ctx.book.answered('nnc', name, written, sent);
    ctx.book.unreserve(record, added);
    ctx.counters.writes++;
    ctx.metrics?.statusWrite('success');
    return { kind: 'written', nnc: written, added };
  } catch (err) {
    const code = apiErrorInfo(err).statusCode;
    if (isNotFound(err)) ctx.book.answered('nnc', name, undefined, sent);
    // Refused: in no status. Otherwise it may have landed: held until settled.
    if (code !== undefined && code >= 400 && code < 500) ctx.book.unreserve(record, added);
    else ctx.book.doubt(record, base, baseSeen, added, code);
    if (code === 409 || code === 404) {
      ctx.counters.conflicts++;
      ctx.metrics?.statusWrite('conflict');
      return { kind: 'conflict' };
    }
    ctx.metrics?.statusWrite('failure');
    throw err;
  }
}

/** Addresses another record holds, kept out of the node's status: said once each, the node woken when one comes free. */
function noteWithheld(ctx: SyncContext, record: RecordView, withheld: string[]): void {
  const newly = withheld.filter((ip) => !record.withheld?.includes(ip));
  ctx.book.withhold(record, withheld);
  if (newly.length === 0) return;
  ctx.log.warn('addresses withheld: another NodeNetworkConfig holds them', {
    node: record.name,
    addresses: withheld.slice(0, 5),
    count: withheld.length,
  });
  ctx.metrics?.withheld(newly.length);
}
