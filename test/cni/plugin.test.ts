// The plugin as the runtime runs it: the built binary (cni-plugin/, through
// bin/pool-monitor-cni) against the sidecar's node API (src/nodeapi/ with a
// fake store, in this process) over its unix socket with a token, and over
// a loopback URL. What the Go tests (cni-plugin/internal/plugin/) check
// against a fake, checked here against the real endpoints: ADD's address as
// the sidecar assigns it, CHECK, DEL (twice, the second without netns or
// args), GC (nothing released without a list; either list name; as libcni
// builds it from each example conflist), STATUS, a refused token, a token
// file others can read. The binary is static: nothing of the host but the
// kernel is needed. Without the binary and without go to build it, one line
// says the tests were skipped and why.
import { expect } from 'chai';
import {
  chmodSync,
  closeSync,
  mkdtempSync,
  openSync,
  readFileSync,
  readSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeStore } from '../nodeapi/fake-store.ts';
import { call, startApi, type Harness } from '../nodeapi/harness.ts';
import { BINARY, execCni, LAUNCHER, libcniConf, whyNoPlugin, type CniRun } from './netns.ts';

const TOKEN = 'plugin-test-node-api-token';
const NETWORK = 'net-a';

function plugin(env: Record<string, string>, stdin: unknown): Promise<CniRun> {
  return execCni(
    LAUNCHER,
    [],
    { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env },
    JSON.stringify(stdin),
  );
}

/** Whether an ELF file asks for a program interpreter (a dynamic loader): PT_INTERP. */
function hasInterpreter(file: string): boolean {
  const fd = openSync(file, 'r');
  try {
    const head = Buffer.alloc(64);
    readSync(fd, head, 0, 64, 0);
    expect(head.subarray(0, 4).toString('latin1')).to.equal('\x7fELF');
    expect(head[4], 'ELF64').to.equal(2);
    const phoff = Number(head.readBigUInt64LE(32));
    const phentsize = head.readUInt16LE(54);
    const phnum = head.readUInt16LE(56);
    const table = Buffer.alloc(phentsize * phnum);
    readSync(fd, table, 0, table.length, phoff);
    for (let i = 0; i < phnum; i++) if (table.readUInt32LE(i * phentsize) === 3) return true;
    return false;
  } finally {
    closeSync(fd);
  }
}

describe('pool-monitor-cni, the binary, against the node API over HTTP', function () {
  this.timeout(60_000);
  // The same store behind two node APIs: one on a unix socket, one on a port.
  let h: Harness;
  let web: Harness;
  let dir: string;
  let sock: string;
  let tokenFile: string;
  const env = (cmd: string, c: string, extra: Record<string, string> = {}) => ({
    CNI_COMMAND: cmd,
    CNI_CONTAINERID: c,
    CNI_IFNAME: 'eth0',
    CNI_NETNS: `/var/run/netns/${c}`,
    CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=pod-${c}`,
    ...extra,
  });
  const conf = (extra: object = {}, ipam: object = {}) => ({
    cniVersion: '1.0.0',
    name: NETWORK,
    type: 'bridge',
    ipam: { type: 'pool-monitor-cni', nodeAPI: `unix:${sock}`, tokenFile, ...ipam },
    ...extra,
  });
  const post = (path: string, body: unknown) =>
    call(web.port, 'POST', path, JSON.stringify(body), {
      'content-type': 'application/json',
      authorization: `Bearer ${TOKEN}`,
    });
  const stateOf = async (ip: string) => {
    const res = await post('/debug/ipaddresses', {});
    const list = (res.json as { IPConfigurationStatus: { IPAddress: string }[] })
      .IPConfigurationStatus;
    return list.find((r) => r.IPAddress === ip);
  };

  before(async function () {
    const why = whyNoPlugin();
    if (why) {
      console.log(`    skipped: the CNI plugin's binary tests: ${why}`);
      this.skip();
    }
    dir = mkdtempSync(join(tmpdir(), 'cni-plugin-'));
    sock = join(dir, 'cns.sock');
    tokenFile = join(dir, 'token');
    writeFileSync(tokenFile, `${TOKEN}\n`, { mode: 0o600 });
    const store = FakeStore.withIps(8);
    h = await startApi(store, { token: () => TOKEN }, false);
    await h.api.listenUnix(sock, {});
    web = await startApi(store, { token: () => TOKEN });
    web.state.ready = true;
    h.state.ready = true;
  });

  after(async () => {
    await h?.close();
    await web?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('is one static executable: no dynamic loader, no Node', () => {
    expect(hasInterpreter(BINARY)).to.equal(false);
  });

  it("ADD gives the address the sidecar assigns the pod, with the subnet's prefix, gateway and default route; again the same", async () => {
    const add = await plugin(env('ADD', 'c1'), conf());
    expect(add.code, add.out).to.equal(0);
    const address = (add.json!.ips as { address: string }[])[0]!.address;
    expect(add.json).to.deep.equal({
      cniVersion: '1.0.0',
      ips: [{ address, gateway: '10.240.0.1' }],
      routes: [{ dst: '0.0.0.0/0', gw: '10.240.0.1' }],
      dns: {},
    });
    expect(address).to.match(/^10\.240\.1\.\d+\/16$/);
    expect(await stateOf(address.split('/')[0]!)).to.deep.include({
      State: 'Assigned',
      PodInfo: {
        PodName: 'pod-c1',
        PodNamespace: 'default',
        PodInfraContainerID: 'c1',
        PodInterfaceID: `cni/${NETWORK}/c1/eth0`,
      },
    });
    const again = await plugin(env('ADD', 'c1'), conf());
    expect(again.json).to.deep.equal(add.json);
  });

  it('CHECK agrees, DEL releases (twice, the second without netns or args), CHECK then says 3', async () => {
    const add = await plugin(env('ADD', 'c2'), conf());
    expect(add.code, add.out).to.equal(0);
    const check = await plugin(env('CHECK', 'c2'), conf({ prevResult: add.json }));
    expect(check, check.out).to.deep.include({ code: 0, out: '' });
    const wrong = await plugin(
      env('CHECK', 'c2'),
      conf({ prevResult: { ips: [{ address: '10.9.9.9/16' }] } }),
    );
    expect(wrong.json).to.include({ code: 102 });
    const del = await plugin(env('DEL', 'c2'), conf());
    expect(del, del.out).to.deep.include({ code: 0, out: '' });
    const ip = (add.json!.ips as { address: string }[])[0]!.address.split('/')[0]!;
    expect(await stateOf(ip)).to.deep.include({ State: 'Available', PodInfo: null });
    const bare = await plugin(
      { CNI_COMMAND: 'DEL', CNI_CONTAINERID: 'c2', CNI_IFNAME: 'eth0' },
      conf(),
    );
    expect(bare, bare.out).to.deep.include({ code: 0, out: '' });
    const gone = await plugin(env('CHECK', 'c2'), conf({ prevResult: add.json }));
    expect(gone.code).to.equal(1);
    expect(gone.json).to.include({ cniVersion: '1.0.0', code: 3 });
  });

  it('GC (1.1.0, invoked directly) releases the attachments the runtime no longer lists', async () => {
    for (const c of ['g1', 'g2']) expect((await plugin(env('ADD', c), conf())).code).to.equal(0);
    const gc = await plugin(
      { CNI_COMMAND: 'GC' },
      {
        cniVersion: '1.1.0',
        name: NETWORK,
        type: 'pool-monitor-cni',
        nodeAPI: `unix:${sock}`,
        tokenFile,
        'cni.dev/valid-attachments': [
          { containerID: 'c1', ifname: 'eth0' },
          { containerID: 'g1', ifname: 'eth0' },
        ],
      },
    );
    expect(gc, gc.out).to.deep.include({ code: 0, out: '' });
    const res = await post('/network/attachments', { podInterfaceIDPrefix: 'cni/' });
    const left = (res.json as { attachments: { podInterfaceID: string }[] }).attachments;
    expect(left.map((a) => a.podInterfaceID).sort()).to.deep.equal([
      `cni/${NETWORK}/c1/eth0`,
      `cni/${NETWORK}/g1/eth0`,
    ]);
  });

  it('GC without a list releases nothing: both live attachments stay Assigned (issue 53)', async () => {
    const ips: string[] = [];
    for (const c of ['n1', 'n2']) {
      const add = await plugin(env('ADD', c), conf());
      expect(add.code, add.out).to.equal(0);
      ips.push((add.json!.ips as { address: string }[])[0]!.address.split('/')[0]!);
    }
    // What libcni's GCNetworkList sends with nil args: the list's name and
    // version merged into the plugin's entry, no attachment list at all.
    const gc = await plugin({ CNI_COMMAND: 'GC' }, conf({ cniVersion: '1.1.0' }));
    expect(gc, gc.out).to.deep.include({ code: 0, out: '' });
    for (const [i, ip] of ips.entries()) {
      expect(await stateOf(ip), ip).to.deep.include({
        State: 'Assigned',
        PodInfo: {
          PodName: `pod-n${i + 1}`,
          PodNamespace: 'default',
          PodInfraContainerID: `n${i + 1}`,
          PodInterfaceID: `cni/${NETWORK}/n${i + 1}/eth0`,
        },
      });
    }
    // The published 1.1.0 text's name for the list is read too.
    const listed = await plugin(
      { CNI_COMMAND: 'GC' },
      conf({
        cniVersion: '1.1.0',
        'cni.dev/attachments': ['c1', 'g1', 'n1'].map((c) => ({ containerID: c, ifname: 'eth0' })),
      }),
    );
    expect(listed, listed.out).to.deep.include({ code: 0, out: '' });
    expect(await stateOf(ips[0]!)).to.deep.include({ State: 'Assigned' });
    expect(await stateOf(ips[1]!)).to.deep.include({ State: 'Available', PodInfo: null });
  });

  for (const example of ['bridge.conflist', 'macvlan.conflist', 'ptp.conflist']) {
    it(`GC and STATUS as libcni sends them for ${example} (1.1.0): the stale attachment released, the live one kept`, async () => {
      const list = JSON.parse(
        readFileSync(new URL(`../../manifests/examples/cni/${example}`, import.meta.url), 'utf8'),
      ) as { name: string; cniVersion: string; plugins: { ipam?: { type: string } }[] };
      expect(list.cniVersion).to.equal('1.1.0');
      const found = list.plugins.find((p) => p.ipam?.type === 'pool-monitor-cni');
      expect(found, `${example}: no plugin with pool-monitor-cni as its ipam`).to.not.equal(
        undefined,
      );
      // The example as written, but for where this test's node API listens.
      const entry = { ...found!, ipam: { ...found!.ipam, nodeAPI: `unix:${sock}`, tokenFile } };
      const ips: string[] = [];
      for (const c of ['x1', 'x2']) {
        // What the main plugin hands its IPAM at ADD: its entry, name and version merged.
        const add = await plugin(env('ADD', c), JSON.parse(libcniConf(list, entry)));
        expect(add.code, add.out).to.equal(0);
        expect(add.json).to.have.property('cniVersion', '1.1.0');
        ips.push((add.json!.ips as { address: string }[])[0]!.address.split('/')[0]!);
      }
      const status = await plugin({ CNI_COMMAND: 'STATUS' }, JSON.parse(libcniConf(list, entry)));
      expect(status, status.out).to.deep.include({ code: 0, out: '' });
      for (const valid of [undefined, null]) {
        const none = await plugin(
          { CNI_COMMAND: 'GC' },
          JSON.parse(libcniConf(list, entry, valid)),
        );
        expect(none, none.out).to.deep.include({ code: 0, out: '' });
        for (const ip of ips)
          expect(await stateOf(ip), `${valid}`).to.deep.include({ State: 'Assigned' });
      }
      const gc = await plugin(
        { CNI_COMMAND: 'GC' },
        JSON.parse(libcniConf(list, entry, [{ containerID: 'x1', ifname: 'eth0' }])),
      );
      expect(gc, gc.out).to.deep.include({ code: 0, out: '' });
      expect(await stateOf(ips[0]!)).to.deep.include({
        State: 'Assigned',
        PodInfo: {
          PodName: 'pod-x1',
          PodNamespace: 'default',
          PodInfraContainerID: 'x1',
          PodInterfaceID: `cni/${list.name}/x1/eth0`,
        },
      });
      expect(await stateOf(ips[1]!)).to.deep.include({ State: 'Available', PodInfo: null });
      // The rest of the test's addresses: x1 goes too.
      const all = await plugin({ CNI_COMMAND: 'GC' }, JSON.parse(libcniConf(list, entry, [])));
      expect(all, all.out).to.deep.include({ code: 0, out: '' });
      expect(await stateOf(ips[0]!)).to.deep.include({ State: 'Available' });
    });
  }

  it('STATUS fails with 50 and the reason while the sidecar is not ready, passes once it is', async () => {
    const status = conf({ cniVersion: '1.1.0' });
    h.state.ready = false;
    const waiting = await plugin({ CNI_COMMAND: 'STATUS' }, status);
    expect(waiting.code).to.equal(1);
    expect(waiting.json).to.include({ cniVersion: '1.1.0', code: 50 });
    expect(String(waiting.json!.msg)).to.match(/not ready \(HTTP 503/);
    h.state.ready = true;
    const ready = await plugin({ CNI_COMMAND: 'STATUS' }, status);
    expect(ready, ready.out).to.deep.include({ code: 0, out: '' });
  });

  it('a token file group or others can read is refused, naming the file and its mode; nothing is assigned', async () => {
    const open = join(dir, 'open-token');
    writeFileSync(open, `${TOKEN}\n`);
    chmodSync(open, 0o644);
    const before = await post('/debug/ipaddresses', {});
    const refused = await plugin(env('ADD', 'c4'), conf({}, { tokenFile: open }));
    expect(refused.code).to.equal(1);
    expect(refused.json).to.deep.equal({
      cniVersion: '1.0.0',
      code: 7,
      msg: `invalid network configuration: ipam.tokenFile ${open} is open to group or others (mode 0644): the node API token must be its owner's only (chmod 600 ${open})`,
    });
    expect((await post('/debug/ipaddresses', {})).json).to.deep.equal(before.json);
    chmodSync(open, 0o600);
    const del = await plugin(env('DEL', 'c4'), conf({}, { tokenFile: open }));
    expect(del, del.out).to.deep.include({ code: 0, out: '' });
  });

  it('a wrong token is refused with 100; the URL form of nodeAPI works as the socket does', async () => {
    const wrongFile = join(dir, 'wrong-token');
    writeFileSync(wrongFile, 'not-the-token-at-all', { mode: 0o600 });
    const refused = await plugin(env('ADD', 'c3'), conf({}, { tokenFile: wrongFile }));
    expect(refused.code).to.equal(1);
    expect(refused.json).to.include({ code: 100 });
    expect(String(refused.json!.msg)).to.match(/ipam\.tokenFile must hold/);
    const overUrl = await plugin(
      env('ADD', 'c3'),
      conf({}, { nodeAPI: `http://127.0.0.1:${web.port}` }),
    );
    expect(overUrl.code, overUrl.out).to.equal(0);
    expect(overUrl.json).to.have.nested.property('ips[0].gateway', '10.240.0.1');
  });
});
