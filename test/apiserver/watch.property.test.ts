// Property: whatever the interleaving of writes and watch reconnects (each
// resuming from the last resourceVersion the client saw), the client receives
// every event of its resource exactly once, in order.
import { expect } from 'chai';
import fc from 'fast-check';
import type { KObject } from '../../src/kube/json-object.ts';
import { BUILTIN_RESOURCES } from '../../harness/apiserver/resources.ts';
import type { ApiServer } from '../../harness/apiserver/server.ts';
import { ObjectStore } from '../../harness/apiserver/store.ts';
import { startWatch, type ActiveWatch } from '../../harness/apiserver/watch.ts';
import { call, NNC_PATH, nnc, openWatch, withCrds } from './helpers.ts';

type Op = { op: 'write'; id: number; resource: 'pods' | 'nodes' } | { op: 'reconnect' };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      op: fc.constant('write' as const),
      id: fc.integer({ min: 0, max: 3 }),
      resource: fc.constantFrom('pods' as const, 'nodes' as const),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ op: 'reconnect' as const }) },
);

const pods = BUILTIN_RESOURCES.find((r) => r.plural === 'pods')!;

describe('cluster: watch resume property', () => {
  it('in process: every event once, in order, across reconnects', () => {
    fc.assert(
      fc.property(
        fc.array(opArb, { maxLength: 60 }),
        fc.integer({ min: 5, max: 200 }),
        (ops, historyLimit) => {
          const store = new ObjectStore(Math.max(historyLimit, 64));
          const expected: number[] = [];
          const received: number[] = [];
          store.subscribe((ev) => {
            if (ev.resource === 'pods') expected.push(ev.rv);
          });
          let lastRv = store.currentRv();
          let watch: ActiveWatch | undefined;
          const connect = (): void => {
            watch = startWatch(
              store,
              {
                resource: pods,
                selector: () => true,
                fromRv: lastRv,
                bookmarks: false,
                bookmarkIntervalMs: 1000,
                encode: (type, o) => JSON.stringify({ type, rv: o.metadata.resourceVersion }),
              },
              {
                send: (line) => {
                  const ev = JSON.parse(line) as { type: string; rv: string };
                  expect(ev.type).to.not.equal('ERROR');
                  received.push(Number(ev.rv));
                  lastRv = Number(ev.rv);
                },
                end: () => undefined,
              },
              () => undefined,
            );
          };
          connect();
          const live = new Map<string, KObject>();
          for (const op of ops) {
            if (op.op === 'reconnect') {
              watch?.stop();
              connect();
              continue;
            }
            const key = `${op.resource}/${op.id}`;
            const prev = live.get(key);
            const obj: KObject = { metadata: { name: `o${op.id}`, namespace: 'default' } };
            if (!prev) {
              store.commit('ADDED', op.resource, obj);
              live.set(key, obj);
            } else if (op.id % 2 === 0) {
              store.commit('DELETED', op.resource, obj, prev);
              live.delete(key);
            } else {
              store.commit('MODIFIED', op.resource, obj, prev);
              live.set(key, obj);
            }
          }
          watch?.stop();
          expect(received).to.deep.equal(expected);
        },
      ),
      { numRuns: 300 },
    );
  });

  describe('over HTTP', function () {
    this.timeout(60_000);
    let server: ApiServer;
    before(async () => {
      server = await withCrds();
    });
    after(() => server.close());

    it('every event once, in order, when the client reconnects between writes', async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.array(
            fc.oneof(
              fc.integer({ min: 0, max: 2 }).map((id) => ({ op: 'write' as const, id })),
              fc.constant({ op: 'reconnect' as const }),
            ),
            { maxLength: 15 },
          ),
          async (ops) => {
            const start = (await call(server, 'GET', NNC_PATH)).body.metadata
              .resourceVersion as string;
            const expected: string[] = [];
            const received: string[] = [];
            let lastRv = start;
            let w = await openWatch(server, `${NNC_PATH}?watch=true&resourceVersion=${lastRv}`);
            const drain = async (): Promise<void> => {
              await w.waitFor(expected.length - received.length);
              for (const e of w.events.splice(0)) {
                received.push(
                  `${e.type} ${e.object.metadata.name} ${e.object.metadata.resourceVersion}`,
                );
                lastRv = e.object.metadata.resourceVersion as string;
              }
            };
            for (const op of ops) {
              if (op.op === 'reconnect') {
                await drain();
                w.close();
                w = await openWatch(server, `${NNC_PATH}?watch=true&resourceVersion=${lastRv}`);
                continue;
              }
              const name = `p${op.id}`;
              const got = await call(server, 'GET', `${NNC_PATH}/${name}`);
              let r;
              if (got.status === 404) r = await call(server, 'POST', NNC_PATH, nnc(name, 1));
              else if (got.body.spec.requestedIPCount > 2)
                r = await call(server, 'DELETE', `${NNC_PATH}/${name}`);
              else
                r = await call(
                  server,
                  'PATCH',
                  `${NNC_PATH}/${name}`,
                  { spec: { requestedIPCount: got.body.spec.requestedIPCount + 1 } },
                  'application/merge-patch+json',
                );
              const type =
                got.status === 404
                  ? 'ADDED'
                  : got.body.spec.requestedIPCount > 2
                    ? 'DELETED'
                    : 'MODIFIED';
              expected.push(`${type} ${name} ${r.body.metadata.resourceVersion}`);
            }
            await drain();
            w.close();
            expect(received).to.deep.equal(expected);
          },
        ),
        { numRuns: 15 },
      );
    });
  });
});
