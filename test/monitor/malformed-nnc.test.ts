// Found by the CRD-object fuzz (test/fuzz/): a NodeNetworkConfig whose status
// lists null (or other non-object) network containers or IP assignments
// crashed the sidecar process (TypeError in staleIds / dynamicContainers,
// thrown out of the monitor's RxJS scan). Everything an NNC carries is
// untrusted: such an NNC is ignored or read around, never a crash.
import { expect } from 'chai';
import { followNnc } from '../../src/ipstore/follow-nnc.ts';
import { openIpStore } from '../../src/ipstore/sqlite-store.ts';
import { silentLogger } from '../../src/log/logger.ts';
import { reduce } from '../../src/monitor/reduce.ts';
import { initialState } from '../../src/monitor/state.ts';
import {
  dynamicContainers,
  invalidNncReason,
  type NodeNetworkConfig,
} from '../../src/nnc/types.ts';

const scaler = {
  batchSize: 4,
  requestThresholdPercent: 50,
  releaseThresholdPercent: 150,
  maxIPCount: 250,
};
const good = {
  id: 'nc-1',
  assignmentMode: 'dynamic',
  primaryIP: '10.240.0.4',
  subnetAddressSpace: '10.240.0.0/24',
  defaultGateway: '10.240.0.1',
  ipAssignments: [{ name: 'a', ip: '10.240.0.5' }],
};

const statuses: unknown[] = [
  { scaler, networkContainers: [null] },
  { scaler, networkContainers: [good, null, 7, 'x'] },
  {
    scaler,
    networkContainers: [
      { ...good, ipAssignments: [null, 3, 'x', { name: 'b', ip: '10.240.0.6' }] },
    ],
  },
  { scaler, networkContainers: [{ ...good, ipAssignments: 'lots' }] },
  { scaler, networkContainers: [{ ...good, ipAssignments: 12 }] },
  { scaler, networkContainers: 12 },
  { scaler, networkContainers: { a: 1 } },
  { scaler: null, networkContainers: [good] },
  { scaler: 'big', networkContainers: [good] },
  'status',
  null,
];

describe('monitor and store follower: malformed NNC statuses (fuzz finding)', () => {
  for (const [i, status] of statuses.entries()) {
    it(`reads around status #${i} (${JSON.stringify(status).slice(0, 60)}) without throwing`, () => {
      const nnc = {
        metadata: {
          name: 'n',
          namespace: 'kube-system',
          uid: 'u',
          resourceVersion: String(10 + i),
        },
        spec: { requestedIPCount: 4, ipsNotInUse: ['a', null, 5] },
        status,
      } as unknown as NodeNetworkConfig;
      expect(() => invalidNncReason(nnc)).to.not.throw();
      expect(() => dynamicContainers(nnc)).to.not.throw();
      const store = openIpStore({ memory: true });
      try {
        const follower = followNnc(store, { logger: silentLogger() });
        expect(() => follower.follow(nnc)).to.not.throw();
        const s0 = initialState({ releaseDelayMs: 0, writeWindowMs: 500 });
        expect(() => reduce(s0, { type: 'nnc', at: 1, nnc })).to.not.throw();
      } finally {
        store.close();
      }
    });
  }
});
