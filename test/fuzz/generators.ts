// Generated NodeNetworkConfig, ClusterSubnetState and Pod objects for the
// CRD-object fuzz: each is mostly right and wrong in a few places (wrong
// types, missing fields, huge and negative numbers, unknown fields,
// duplicate and malformed IPs, bad UUIDs, wrong namespaces), as a foreign
// controller, an old CRD without a schema, or a person with kubectl could
// leave them. Every value says which fields it broke, so the test can ask
// that the component responsible named them.
import fc from 'fast-check';

export const FUZZ_NODE = 'fuzz-node';
export const FUZZ_NAMESPACE = 'kube-system';
export const FUZZ_SUBNET = '10.240.0.0/24';
export const FUZZ_SUBNET_NAME = 'subnet-10-240-0-0-24';
export const OTHER_NAMESPACE = 'fuzz-other';

/** One write the fuzzer makes. */
export type FuzzOp =
  | { kind: 'nnc-spec'; spec: unknown; broken: string[] }
  | { kind: 'nnc-status'; status: unknown; broken: string[] }
  | { kind: 'nnc-other'; namespace: string; name: string; spec: unknown; status: unknown }
  | { kind: 'css'; namespace: string; name: string; status: unknown; broken: string[] }
  | { kind: 'pod'; namespace: string; name: string; spec: unknown; status: unknown };

interface Broken<T> {
  value: T;
  broken: string[];
}

/** A value that is right (`good`) most of the time, else one of the bad ones, saying so. */
function maybe<T>(
  field: string,
  good: fc.Arbitrary<T>,
  bad: fc.Arbitrary<unknown>,
  badWeight = 1,
): fc.Arbitrary<Broken<unknown>> {
  return fc.oneof(
    { weight: 4, arbitrary: good.map((value) => ({ value, broken: [] as string[] })) },
    { weight: badWeight, arbitrary: bad.map((value) => ({ value, broken: [field] })) },
  );
}

const MISSING = Symbol('missing');

/** An object from fields, dropping the missing ones, with the broken fields collected. */
function record(
  fields: Record<string, fc.Arbitrary<Broken<unknown>>>,
): fc.Arbitrary<Broken<Record<string, unknown>>> {
  return fc.record(fields).map((r) => {
    const value: Record<string, unknown> = {};
    const broken: string[] = [];
    for (const [k, v] of Object.entries(r)) {
      if (v.value !== MISSING) value[k] = v.value;
      broken.push(...v.broken);
    }
    return { value, broken };
  });
}

const missing = fc.constant(MISSING);
const uuid = fc.uuid({ version: 4 });
const badUuid = fc.oneof(
  fc.constant(''),
  fc.constant('not-a-uuid'),
  fc.string({ maxLength: 12 }),
  fc.uuid().map((u) => u.toUpperCase().replace(/-/g, '')),
  fc.integer(),
);
const hugeOrNegative = fc.oneof(
  fc.integer({ min: -1_000_000, max: -1 }),
  fc.constant(2 ** 53),
  fc.constant(1e30),
  fc.constant(-0.5),
  fc.double({ min: 0.1, max: 1000, noNaN: true }).filter((d) => !Number.isInteger(d)),
);
const wrongType = fc.oneof(
  fc.string({ maxLength: 8 }),
  fc.boolean(),
  fc.constant(null),
  fc.constant([]),
  fc.constant({}),
);

/** An address of the pod subnet's usable range (.4 to .254). */
const subnetIp = fc.integer({ min: 4, max: 254 }).map((h) => `10.240.0.${h}`);
const badIp = fc.oneof(
  fc.constant('10.240.0.999'),
  fc.constant('10.99.0.5'), // outside the subnet
  fc.constant('fd00::5'),
  fc.constant('not-an-ip'),
  fc.constant(''),
  fc.constant('10.240.0.0'), // the network address
  fc.integer({ min: 0, max: 9 }),
  fc.constant(null),
);

const assignment = (i: number, j: number): fc.Arbitrary<Broken<unknown>> =>
  fc.oneof(
    {
      weight: 6,
      arbitrary: record({
        name: maybe(`status.networkContainers[${i}].ipAssignments[${j}].name`, uuid, badUuid),
        ip: maybe(`status.networkContainers[${i}].ipAssignments[${j}].ip`, subnetIp, badIp),
      }),
    },
    {
      weight: 1,
      arbitrary: wrongType.map((value) => ({
        value,
        broken: [`status.networkContainers[${i}].ipAssignments[${j}]`],
      })),
    },
  );

function assignments(i: number): fc.Arbitrary<Broken<unknown>> {
  const field = `status.networkContainers[${i}].ipAssignments`;
  const list = fc.integer({ min: 0, max: 12 }).chain((n) =>
    fc.tuple(...Array.from({ length: n }, (_, j) => assignment(i, j))).map((items) => ({
      value: items.map((x) => x.value),
      broken: items.flatMap((x) => x.broken),
    })),
  );
  // Duplicates: one entry listed twice (same id, or same address under two ids).
  const withDuplicate = fc.tuple(uuid, uuid, subnetIp, fc.boolean()).map(([a, b, ip, sameId]) => ({
    value: [
      { name: a, ip },
      { name: sameId ? a : b, ip: sameId ? '10.240.0.250' : ip },
    ],
    broken: [field],
  }));
  return fc.oneof(
    { weight: 6, arbitrary: list },
    { weight: 1, arbitrary: withDuplicate },
    { weight: 1, arbitrary: wrongType.map((value) => ({ value, broken: [field] })) },
  );
}

function container(i: number): fc.Arbitrary<Broken<unknown>> {
  const at = `status.networkContainers[${i}]`;
  return record({
    id: maybe(`${at}.id`, uuid, fc.oneof(fc.constant(''), fc.integer(), fc.constant(null))),
    assignmentMode: maybe(
      `${at}.assignmentMode`,
      fc.oneof(fc.constant('dynamic'), missing),
      fc.oneof(fc.constant('weird'), fc.integer()),
    ),
    type: maybe(`${at}.type`, fc.constant('vnet'), fc.integer()),
    primaryIP: maybe(`${at}.primaryIP`, fc.constant('10.240.0.4'), badIp),
    subnetName: maybe(`${at}.subnetName`, fc.constant(FUZZ_SUBNET_NAME), wrongType),
    subnetAddressSpace: maybe(
      `${at}.subnetAddressSpace`,
      fc.constant(FUZZ_SUBNET),
      fc.oneof(fc.constant('10.240.0.0/99'), fc.constant('nonsense'), fc.integer()),
    ),
    defaultGateway: maybe(`${at}.defaultGateway`, fc.constant('10.240.0.1'), badIp),
    version: maybe(`${at}.version`, fc.nat(1000), hugeOrNegative),
    nodeIP: maybe(`${at}.nodeIP`, fc.constant('10.224.0.4'), badIp),
    ipAssignments: assignments(i),
    [`unknown${i}`]: fc.oneof(missing, fc.string()).map((value) => ({ value, broken: [] })),
  });
}

const scalerInt = (field: string, good: fc.Arbitrary<number>) =>
  maybe(field, good, fc.oneof(hugeOrNegative, wrongType, fc.constant(0), missing));

const scaler = fc.oneof(
  {
    weight: 8,
    arbitrary: record({
      batchSize: scalerInt('status.scaler.batchSize', fc.integer({ min: 1, max: 32 })),
      requestThresholdPercent: scalerInt(
        'status.scaler.requestThresholdPercent',
        fc.integer({ min: 1, max: 100 }),
      ),
      releaseThresholdPercent: scalerInt(
        'status.scaler.releaseThresholdPercent',
        fc.integer({ min: 101, max: 300 }),
      ),
      maxIPCount: scalerInt('status.scaler.maxIPCount', fc.integer({ min: 1, max: 250 })),
    }),
  },
  { weight: 1, arbitrary: wrongType.map((value) => ({ value, broken: ['status.scaler'] })) },
);

/** A status for the live node's NNC, as a foreign writer might leave it. */
export const nncStatusArb: fc.Arbitrary<Broken<unknown>> = fc.oneof(
  {
    weight: 10,
    arbitrary: fc
      .tuple(
        scaler,
        fc
          .integer({ min: 0, max: 2 })
          .chain((n) => fc.tuple(...Array.from({ length: n }, (_, i) => container(i)))),
        maybe('status.assignedIPCount', fc.nat(250), fc.oneof(hugeOrNegative, wrongType)),
        fc.oneof(fc.constant(MISSING), fc.constant({ nested: [1, { deep: true }] })),
      )
      .map(([s, ncs, count, extra]) => ({
        value: {
          scaler: s.value,
          networkContainers: ncs.map((x) => x.value),
          assignedIPCount: count.value,
          ...(extra !== MISSING ? { unknownField: extra } : {}),
        },
        broken: [...s.broken, ...ncs.flatMap((x) => x.broken), ...count.broken],
      })),
  },
  {
    weight: 1,
    arbitrary: fc
      .oneof(wrongType, fc.constant({ networkContainers: 'lots' }))
      .map((value) => ({ value, broken: ['status'] })),
  },
);

/** A spec for the live node's NNC, as someone other than its sidecar might write it. */
export const nncSpecArb: fc.Arbitrary<Broken<unknown>> = record({
  requestedIPCount: maybe(
    'spec.requestedIPCount',
    fc.nat(250),
    fc.oneof(
      hugeOrNegative.filter((v) => v !== 2 ** 53 && v !== 1e30),
      wrongType,
    ),
  ),
  ipsNotInUse: maybe(
    'spec.ipsNotInUse',
    fc.array(uuid, { maxLength: 4 }),
    fc.oneof(
      fc.string(),
      fc.array(fc.oneof(fc.integer(), fc.constant(null)), { minLength: 1, maxLength: 3 }),
      fc.constant({}),
    ),
  ),
  bogus: fc.oneof(missing, fc.integer()).map((value) => ({ value, broken: [] })),
});

const namespaceArb = fc.constantFrom(FUZZ_NAMESPACE, FUZZ_NAMESPACE, 'default', OTHER_NAMESPACE);

export const cssArb: fc.Arbitrary<FuzzOp> = fc
  .tuple(
    namespaceArb,
    fc.constantFrom(FUZZ_SUBNET_NAME, FUZZ_SUBNET_NAME, 'other-subnet'),
    record({
      exhausted: maybe(
        'status.exhausted',
        fc.boolean(),
        fc.oneof(fc.constant('true'), fc.integer(), fc.constant(null), fc.constant({})),
      ),
      timestamp: maybe(
        'status.timestamp',
        fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
        fc.integer(),
      ),
    }),
  )
  .map(([namespace, name, status]) => ({
    kind: 'css',
    namespace,
    name,
    status: status.value,
    broken: status.broken,
  }));

export const podArb: fc.Arbitrary<FuzzOp> = fc
  .tuple(
    namespaceArb,
    fc.integer({ min: 0, max: 40 }),
    fc.record({
      nodeName: fc.oneof(fc.constant(FUZZ_NODE), fc.constant('other-node'), missing),
      hostNetwork: fc.oneof(fc.boolean(), missing, fc.constant('yes'), fc.integer()),
      bogus: fc.oneof(missing, fc.string()),
    }),
    fc.record({
      phase: fc.oneof(
        fc.constantFrom('Pending', 'Running', 'Succeeded', 'Failed', 'Unknown', 'Exploded'),
        fc.integer(),
        missing,
      ),
      podIP: fc.oneof(subnetIp, badIp, missing),
      podIPs: fc.oneof(
        fc.array(fc.record({ ip: fc.oneof(subnetIp, badIp) }), { maxLength: 3 }),
        fc.string(),
        missing,
      ),
    }),
  )
  .map(([namespace, n, spec, status]) => ({
    kind: 'pod',
    namespace,
    name: `fuzz-pod-${n}`,
    spec: {
      containers: [{ name: 'c', image: 'fuzz' }],
      ...Object.fromEntries(Object.entries(spec).filter(([, v]) => v !== MISSING)),
    },
    status: Object.fromEntries(Object.entries(status).filter(([, v]) => v !== MISSING)),
  }));

export const fuzzOpArb: fc.Arbitrary<FuzzOp> = fc.oneof(
  {
    weight: 4,
    arbitrary: nncStatusArb.map((s): FuzzOp => ({
      kind: 'nnc-status',
      status: s.value,
      broken: s.broken,
    })),
  },
  {
    weight: 3,
    arbitrary: nncSpecArb.map((s): FuzzOp => ({
      kind: 'nnc-spec',
      spec: s.value,
      broken: s.broken,
    })),
  },
  {
    weight: 1,
    arbitrary: fc
      .tuple(
        fc.constantFrom(FUZZ_NAMESPACE, 'default', OTHER_NAMESPACE),
        fc.constantFrom('ghost-node', FUZZ_NODE),
        nncSpecArb,
        nncStatusArb,
      )
      .filter(([ns, name]) => !(ns === FUZZ_NAMESPACE && name === FUZZ_NODE))
      .map(([namespace, name, spec, status]): FuzzOp => ({
        kind: 'nnc-other',
        namespace,
        name,
        spec: spec.value,
        status: status.value,
      })),
  },
  { weight: 2, arbitrary: cssArb },
  { weight: 2, arbitrary: podArb },
);

/** `count` fuzz operations drawn from `seed`: the same seed, the same objects. */
export function fuzzOps(seed: number, count: number): FuzzOp[] {
  return fc.sample(fuzzOpArb, { seed, numRuns: count });
}
