// ADD/DEL storms over real HTTP for the same pod interfaces, with recreated
// sandboxes, pods going away mid-storm and the pod follower (grace 0)
// checking between waves: fast-check picks the storms, the waves' requests
// run concurrently (in a random order, a few ms apart), so ADDs race DELs and
// other sandboxes of the same pod. After every storm the store's invariants
// hold; every sandbox that is certainly live - its ADD answered with an
// IP, and nothing that could undo it (a DEL of its interface, an ADD of
// another sandbox of its pod, its pod going away) not known to have been
// handled before that ADD - holds that very IP, Assigned, in the store; a
// sandbox certainly replaced by a newer one of its pod holds nothing; and a
// pod that went away holds nothing.
import { expect } from 'chai';
import fc from 'fast-check';
import { followPods } from '../../src/ipstore/follow-pods.ts';
import { checkStoreInvariants } from '../../src/ipstore/invariants.ts';
import type { PodView } from '../../src/ipstore/pod-plan.ts';
import { openIpStore } from '../../src/ipstore/sqlite-store.ts';
import { createLogger } from '../../src/log/logger.ts';
import { CaptureTransport } from '../../src/log/capture.ts';
import type { NetworkContainer } from '../../src/nnc/types.ts';
import { post, startApi } from './harness.ts';

const PODS = 3;
const SANDBOXES = 3;
const IPS = 6;

type CniOp = { kind: 'add' | 'del'; pod: number; sandbox: number; jitter: number };
type Op = CniOp | { kind: 'gone'; pod: number; jitter: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 9,
    arbitrary: fc.record({
      kind: fc.constantFrom('add' as const, 'del' as const),
      pod: fc.nat(PODS - 1),
      sandbox: fc.integer({ min: 1, max: SANDBOXES }),
      jitter: fc.nat(2),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('gone' as const),
      pod: fc.nat(PODS - 1),
      jitter: fc.nat(2),
    }),
  },
);

function container(): NetworkContainer {
  return {
    id: 'nc-a',
    assignmentMode: 'dynamic',
    primaryIP: '10.10.0.4',
    subnetAddressSpace: '10.10.0.0/16',
    defaultGateway: '10.10.0.1',
    ipAssignments: Array.from({ length: IPS }, (_, i) => ({
      name: `ip-${i}`,
      ip: `10.10.1.${i + 1}`,
    })),
  };
}

const body = (pod: number, sandbox: number) => ({
  podInterfaceID: `p${pod}-s${sandbox}-eth0`,
  infraContainerID: `p${pod}-s${sandbox}`,
  orchestratorContext: { PodName: `p${pod}`, PodNamespace: 'default' },
  desiredIPAddresses: [],
});

interface Done {
  op: Op;
  sentAt: number;
  ackAt: number;
  code?: number;
  ip?: string;
}

async function storm(waves: Op[][]): Promise<void> {
  const store = openIpStore({ memory: true });
  store.syncInventory([container()]);
  const gone = new Set<number>();
  const pods = (): PodView[] =>
    Array.from({ length: PODS }, (_, i) => i)
      .filter((i) => !gone.has(i))
      .map((i) => ({
        metadata: { name: `p${i}`, namespace: 'default' },
        spec: { nodeName: 'n' },
        status: { phase: 'Running' },
      }));
  const follower = followPods({
    store,
    nodeName: 'n',
    graceMs: 0,
    logger: createLogger({ transports: [new CaptureTransport()] }),
  });
  follower.podsSynced(true);
  follower.inventorySynced();
  follower.pods(pods());
  const h = await startApi(store, { assignGate: () => follower.notReady() });
  let clock = 0;
  const done: Done[] = [];
  try {
    for (const wave of waves) {
      await Promise.all(
        wave.map(async (op) => {
          await new Promise((r) => setTimeout(r, op.jitter));
          const d: Done = { op, sentAt: ++clock, ackAt: 0 };
          if (op.kind === 'gone') {
            gone.add(op.pod);
            follower.pods(pods());
            follower.check();
          } else {
            const res = await post(
              h.port,
              `/network/${op.kind === 'add' ? 'request' : 'release'}ipconfigs`,
              body(op.pod, op.sandbox),
            );
            const json = res.json as {
              response: { ReturnCode: number };
              podIPInfo: { PodIPConfig: { IPAddress: string } }[];
            };
            d.code = json.response.ReturnCode;
            const ip = json.podIPInfo[0]?.PodIPConfig.IPAddress;
            if (ip !== undefined) d.ip = ip;
          }
          d.ackAt = ++clock;
          done.push(d);
        }),
      );
      follower.check();
      const problems = checkStoreInvariants(store, { backing: [container()] });
      expect(problems, JSON.stringify(waves)).to.deep.equal([]);
    }

    const assigned = new Map(store.list(['Assigned']).map((r) => [r.pod?.podInterfaceID, r.ip]));
    // Everything that could undo an ADD and is not known to have been handled before it.
    const mayUndo = (add: Done, other: Done): boolean => {
      if (other === add || other.ackAt < add.sentAt) return false;
      const a = add.op as CniOp;
      const o = other.op;
      if (o.pod !== a.pod) return false;
      if (o.kind === 'gone') return true;
      // A DEL of its interface, or an ADD of another sandbox of the same pod.
      return o.kind === 'del' ? o.sandbox === a.sandbox : o.sandbox !== a.sandbox;
    };
    for (const d of done) {
      if (d.op.kind !== 'add' || d.code !== 0 || d.ip === undefined) continue;
      if (gone.has(d.op.pod) || done.some((o) => mayUndo(d, o))) continue;
      const iface = body(d.op.pod, d.op.sandbox).podInterfaceID;
      expect(
        assigned.get(iface),
        `${iface} answered ${d.ip}; storm ${JSON.stringify(waves)}`,
      ).to.equal(d.ip);
    }
    // A sandbox whose every call was answered before another sandbox of its
    // pod asked for an IP is dead (one sandbox per pod): it holds nothing.
    for (const d of done) {
      if (d.op.kind !== 'add') continue;
      const { pod, sandbox } = d.op;
      for (let other = 1; other <= SANDBOXES; other++) {
        if (other === sandbox) continue;
        const calls = done.filter(
          (o) => o.op.kind !== 'gone' && o.op.pod === pod && o.op.sandbox === other,
        );
        if (calls.length === 0 || calls.some((o) => o.ackAt > d.sentAt)) continue;
        const iface = body(pod, other).podInterfaceID;
        expect(
          assigned.get(iface),
          `${iface} outlived a newer sandbox; storm ${JSON.stringify(waves)}`,
        ).to.equal(undefined);
      }
    }
    // Nothing is left Assigned to a pod that is gone.
    for (const r of store.list(['Assigned'])) {
      expect(
        gone.has(Number(r.pod?.podName.slice(1))),
        `${r.ip} still held by gone ${r.pod?.podName}`,
      ).to.equal(false);
    }
  } finally {
    follower.stop();
    await h.close();
    store.close();
  }
}

describe('nodeapi: ADD/DEL storms over real HTTP (fast-check over interleavings)', function () {
  this.timeout(120_000);

  it('keeps the store invariants, and every certainly-live sandbox holds the IP it was answered', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(opArb, { minLength: 1, maxLength: 8 }), { minLength: 1, maxLength: 6 }),
        storm,
      ),
      { numRuns: 60 },
    );
  });

  it('a DEL racing an ADD of the same interface ends in one consistent state', async () => {
    for (let i = 0; i < 20; i++) {
      await storm([
        [
          { kind: 'add', pod: 0, sandbox: 1, jitter: i % 2 },
          { kind: 'del', pod: 0, sandbox: 1, jitter: (i >> 1) % 2 },
          { kind: 'add', pod: 0, sandbox: 1, jitter: 0 },
        ],
      ]);
    }
  });
});
