// The CNI plugin's pure parts and commands, with a fake node API: the
// configuration's checks (the spec's codes, the key named), the attachment's
// interface id, the result per version, ADD's wait for "no address yet"
// within its deadline, DEL's idempotence, CHECK, GC and STATUS.
import { expect } from 'chai';
import type { HttpAnswer, NodeApiClient } from '../../src/cni-plugin/client.ts';
import { backoffMs } from '../../src/cni-plugin/commands.ts';
import { parseConfig, parseNodeApi } from '../../src/cni-plugin/config.ts';
import { interfaceID, parseCniArgs } from '../../src/cni-plugin/invocation.ts';
import { run } from '../../src/cni-plugin/main.ts';
import { buildResult } from '../../src/cni-plugin/result.ts';

const INFO = {
  PodIPConfig: { IPAddress: '10.10.0.7', PrefixLength: 16 },
  NetworkContainerPrimaryIPConfig: {
    IPSubnet: { IPAddress: '10.10.200.1', PrefixLength: 16 },
    DNSServers: [],
    GatewayIPAddress: '10.10.0.1',
  },
};
const ok = (extra: object = {}): HttpAnswer => ({
  status: 200,
  body: { podIPInfo: [INFO], response: { ReturnCode: 0, Message: '' }, ...extra },
});
const conf = (ipam: object = {}, top: object = {}): string =>
  JSON.stringify({
    cniVersion: '1.0.0',
    name: 'net-a',
    type: 'bridge',
    ipam: { type: 'pool-monitor-cni', nodeAPI: 'http://127.0.0.1:1', ...ipam },
    ...top,
  });
const ENV = {
  CNI_COMMAND: 'ADD',
  CNI_CONTAINERID: 'c1',
  CNI_IFNAME: 'eth0',
  CNI_NETNS: '/var/run/netns/x',
  CNI_ARGS: 'IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-1',
};

/** A node API that answers from a script and records the calls. */
function fakeApi(answer: (path: string, body: unknown) => HttpAnswer) {
  const calls: { method: string; path: string; body: unknown }[] = [];
  const client: NodeApiClient = {
    call: (method, path, body) => {
      calls.push({ method, path, body });
      return Promise.resolve(answer(path, body));
    },
  };
  let clock = 0;
  const deps = {
    client,
    now: () => clock,
    sleep: (ms: number) => {
      clock += ms;
      return Promise.resolve();
    },
  };
  return { calls, deps, elapsed: () => clock };
}

describe('pool-monitor-cni: configuration and invocation', () => {
  it('names the key and gives the spec code for bad configuration', async () => {
    const cases: [string, Record<string, string>, number, RegExp][] = [
      ['{', ENV, 6, /not JSON/],
      [conf({}, { cniVersion: '9.9.9' }), ENV, 1, /incompatible CNI version 9\.9\.9/],
      [conf({ nodeAPI: 'https://x' }), ENV, 7, /ipam\.nodeAPI/],
      [conf({ type: 'host-local' }), ENV, 7, /ipam\.type/],
      [conf({ routes: [{ dst: '10.0.0.0' }] }), ENV, 7, /ipam\.routes\[0\]\.dst/],
      [conf({ dns: { nameservers: ['x'] } }), ENV, 7, /ipam\.dns\.nameservers\[0\]/],
      [conf({ mtu: 0 }), ENV, 7, /ipam\.mtu/],
      [conf({ tokenFile: 'rel' }), ENV, 7, /ipam\.tokenFile/],
      [conf(), { ...ENV, CNI_COMMAND: 'FROB' }, 4, /CNI_COMMAND/],
      [conf(), { ...ENV, CNI_NETNS: '' }, 4, /CNI_NETNS/],
      [conf(), { ...ENV, CNI_ARGS: '' }, 4, /K8S_POD_NAME/],
    ];
    for (const [stdin, env, code, msg] of cases) {
      const { out, code: exit } = await run(env, () => stdin, fakeApi(() => ok()).deps);
      expect(exit, stdin).to.equal(1);
      expect(out, stdin).to.include({ code });
      expect((out as { msg: string }).msg, stdin).to.match(msg);
    }
  });

  it('parses CNI_ARGS, node API addresses and the attachment id', () => {
    expect(parseCniArgs('IgnoreUnknown=1;K8S_POD_NAME=a=b;junk')).to.deep.equal({
      IgnoreUnknown: '1',
      K8S_POD_NAME: 'a=b',
    });
    expect(parseNodeApi('unix:/run/x.sock')).to.deep.equal({ kind: 'unix', path: '/run/x.sock' });
    expect(parseNodeApi('http://127.0.0.1:10092')).to.deep.equal({
      kind: 'http',
      host: '127.0.0.1',
      port: 10092,
    });
    expect(interfaceID('net-a', 'c1', 'eth0')).to.equal('cni/net-a/c1/eth0');
    expect(() => interfaceID('n', 'c'.repeat(260), 'eth0')).to.throw(/256/);
  });

  it('reads GC and STATUS keys from the top level when there is no ipam section', () => {
    const c = parseConfig({
      cniVersion: '1.1.0',
      name: 'net-a',
      type: 'pool-monitor-cni',
      nodeAPI: 'unix:/s.sock',
      tokenFile: '/t',
      'cni.dev/valid-attachments': [{ containerID: 'c1', ifname: 'eth0' }],
    });
    expect(c.nodeAPI).to.deep.equal({ kind: 'unix', path: '/s.sock' });
    expect(c.tokenFile).to.deep.equal({ path: '/t', required: true });
    expect(c.validAttachments).to.deep.equal([{ containerID: 'c1', ifname: 'eth0' }]);
  });
});

describe('pool-monitor-cni: the result', () => {
  it('gives the address with the subnet prefix, the gateway and a default route through it', () => {
    const c = parseConfig(
      JSON.parse(conf({ dns: { nameservers: ['10.0.0.10'] } })) as object as Record<
        string,
        unknown
      >,
    );
    expect(buildResult(c, INFO)).to.deep.equal({
      cniVersion: '1.0.0',
      ips: [{ address: '10.10.0.7/16', gateway: '10.10.0.1' }],
      routes: [{ dst: '0.0.0.0/0', gw: '10.10.0.1' }],
      dns: { nameservers: ['10.0.0.10'] },
    });
  });

  it('follows the configured routes, gateway and MTU (on 1.1.0), and the version of 0.x results', () => {
    const parse = (ipam: object, top: object = {}) =>
      parseConfig(JSON.parse(conf(ipam, top)) as Record<string, unknown>);
    const none = buildResult(parse({ routes: [] }), INFO);
    expect(none.routes).to.deep.equal([]);
    const own = buildResult(
      parse(
        { gateway: '10.10.0.254', routes: [{ dst: '10.96.0.0/12' }], mtu: 1400 },
        { cniVersion: '1.1.0' },
      ),
      INFO,
    );
    expect(own.ips[0]!.gateway).to.equal('10.10.0.254');
    expect(own.routes).to.deep.equal([{ dst: '10.96.0.0/12', gw: '10.10.0.254', mtu: 1400 }]);
    const old = buildResult(parse({}, { cniVersion: '0.4.0' }), INFO);
    expect(old.ips[0]).to.include({ version: '4' });
  });
});

describe('pool-monitor-cni: commands against a fake node API', () => {
  it('ADD asks with the attachment and the pod, and prints the result', async () => {
    const api = fakeApi(() => ok());
    const { out, code } = await run(ENV, () => conf(), api.deps);
    expect(code).to.equal(0);
    expect(out).to.have.nested.property('ips[0].address', '10.10.0.7/16');
    expect(api.calls[0]).to.deep.include({ path: '/network/requestipconfigs' });
    expect(api.calls[0]!.body).to.deep.equal({
      podInterfaceID: 'cni/net-a/c1/eth0',
      infraContainerID: 'c1',
      orchestratorContext: { PodName: 'web-1', PodNamespace: 'default' },
      desiredIPAddresses: [],
    });
  });

  it('ADD waits out ReturnCode 32 with backoff, and gives up with 11 at its deadline', async () => {
    let n = 0;
    const noIp = {
      status: 200,
      body: { podIPInfo: [], response: { ReturnCode: 32, Message: 'none free' } },
    };
    const later = fakeApi(() => (++n < 4 ? noIp : ok()));
    expect((await run(ENV, () => conf(), later.deps)).code).to.equal(0);
    expect(later.elapsed()).to.equal(backoffMs(0) + backoffMs(1) + backoffMs(2));
    const never = fakeApi(() => noIp);
    const { out, code } = await run(ENV, () => conf({ addTimeoutSeconds: 5 }), never.deps);
    expect(code).to.equal(1);
    expect(out).to.include({ code: 11 });
    expect((out as { msg: string }).msg).to.match(/within 5 s.*none free/);
    expect(never.elapsed()).to.be.at.most(5000);
  });

  it('ADD: a refused token is 100, a bad request 101, a 5xx 11', async () => {
    for (const [status, code] of [
      [401, 100],
      [400, 101],
      [500, 11],
    ] as const) {
      const api = fakeApi(() => ({ status, body: { response: { ReturnCode: 23, Message: 'x' } } }));
      expect((await run(ENV, () => conf(), api.deps)).out).to.include({ code });
    }
  });

  it('DEL needs neither netns nor args, and succeeds when nothing is held', async () => {
    const api = fakeApi(() => ({
      status: 200,
      body: { podIPInfo: [], response: { ReturnCode: 0, Message: '' } },
    }));
    const env = { CNI_COMMAND: 'DEL', CNI_CONTAINERID: 'c1', CNI_IFNAME: 'eth0' };
    expect(await run(env, () => conf(), api.deps)).to.deep.equal({ out: undefined, code: 0 });
    expect(api.calls[0]!.body).to.have.property('podInterfaceID', 'cni/net-a/c1/eth0');
  });

  it('CHECK: 3 for an unknown attachment, 102 when the runtime has another address', async () => {
    const env = { ...ENV, CNI_COMMAND: 'CHECK' };
    const prev = (address: string) =>
      conf({}, { prevResult: { cniVersion: '1.0.0', ips: [{ address }] } });
    expect((await run(env, () => prev('10.10.0.7/16'), fakeApi(() => ok()).deps)).code).to.equal(0);
    expect((await run(env, () => prev('10.10.0.8/16'), fakeApi(() => ok()).deps)).out).to.include({
      code: 102,
    });
    const gone = fakeApi(() => ({
      status: 200,
      body: { podIPInfo: [], response: { ReturnCode: 14, Message: '' } },
    }));
    expect((await run(env, () => prev('10.10.0.7/16'), gone.deps)).out).to.include({ code: 3 });
  });

  it('GC releases the attachments of this network the runtime no longer lists', async () => {
    const attachment = (c: string) => ({
      podInterfaceID: `cni/net-a/${c}/eth0`,
      infraContainerID: c,
      podName: `p-${c}`,
      podNamespace: 'default',
      IPAddress: '10.10.0.9',
    });
    const api = fakeApi((path) =>
      path === '/network/attachments'
        ? {
            status: 200,
            body: {
              attachments: [attachment('c1'), attachment('c2')],
              response: { ReturnCode: 0, Message: '' },
            },
          }
        : { status: 200, body: { podIPInfo: [], response: { ReturnCode: 0, Message: '' } } },
    );
    const stdin = JSON.stringify({
      cniVersion: '1.1.0',
      name: 'net-a',
      type: 'pool-monitor-cni',
      nodeAPI: 'http://127.0.0.1:1',
      'cni.dev/valid-attachments': [{ containerID: 'c1', ifname: 'eth0' }],
    });
    expect((await run({ CNI_COMMAND: 'GC' }, () => stdin, api.deps)).code).to.equal(0);
    expect(api.calls.map((c) => c.path)).to.deep.equal([
      '/network/attachments',
      '/network/releaseipconfigs',
    ]);
    expect(api.calls[0]!.body).to.deep.equal({ podInterfaceIDPrefix: 'cni/net-a/' });
    expect(api.calls[1]!.body).to.have.property('podInterfaceID', 'cni/net-a/c2/eth0');
  });

  it('STATUS fails with 50 unless the sidecar is ready and the pool can serve', async () => {
    const stdin = conf({}, { cniVersion: '1.1.0' });
    const env = { CNI_COMMAND: 'STATUS' };
    const pool = (exhausted: boolean, Available: number) => ({
      status: 200,
      body: { exhausted, ipCounts: { Available } },
    });
    const ready = (p: HttpAnswer) =>
      fakeApi((path) => (path === '/readyz' ? { status: 200, body: {} } : p));
    expect(await run(env, () => stdin, ready(pool(false, 0)).deps)).to.deep.equal({
      out: undefined,
      code: 0,
    });
    const dry = await run(env, () => stdin, ready(pool(true, 0)).deps);
    expect(dry.out).to.include({ code: 50 });
    const waiting = fakeApi(() => ({
      status: 503,
      body: { status: 'not ready', reason: 'no NNC yet' },
    }));
    const notReady = await run(env, () => stdin, waiting.deps);
    expect(notReady.out).to.include({ code: 50 });
    expect((notReady.out as { msg: string }).msg).to.contain('no NNC yet');
  });

  it('VERSION answers for any version asked', async () => {
    const { out } = await run({ CNI_COMMAND: 'VERSION' }, () => '{"cniVersion":"0.4.0"}');
    expect(out).to.deep.equal({
      cniVersion: '0.4.0',
      supportedVersions: ['0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0'],
    });
  });
});
