import { expect } from 'chai';
import {
  ConfigError,
  DEFAULT_LISTEN_PORT,
  parseListen,
  resolveSidecarOptions,
} from '../../src/sidecar/options.ts';

describe('sidecar/options', () => {
  describe('parseListen', () => {
    it('defaults to loopback and the default port', () => {
      expect(parseListen('127.0.0.1')).to.deep.equal({
        host: '127.0.0.1',
        port: DEFAULT_LISTEN_PORT,
      });
      expect(parseListen(':8080')).to.deep.equal({ host: '127.0.0.1', port: 8080 });
      expect(parseListen('0.0.0.0:0')).to.deep.equal({ host: '0.0.0.0', port: 0 });
      expect(parseListen('[::1]:9000')).to.deep.equal({ host: '::1', port: 9000 });
      expect(parseListen('localhost:1')).to.deep.equal({ host: 'localhost', port: 1 });
    });
    for (const bad of [
      '127.0.0.1:x',
      '127.0.0.1:70000',
      'a b:1',
      '1.2.3.4:-1',
      'nope',
      'nope:80',
    ]) {
      it(`rejects ${bad}`, () => expect(() => parseListen(bad)).to.throw(ConfigError));
    }
  });

  describe('resolveSidecarOptions', () => {
    it('reads NODENAME and KUBECONFIG when the flags are absent', () => {
      const o = resolveSidecarOptions({}, { NODENAME: 'node-1', KUBECONFIG: '/k' });
      expect(o).to.include({
        nodeName: 'node-1',
        kubeconfig: '/k',
        namespace: 'kube-system',
        listenHost: '127.0.0.1',
        subnetState: 'name',
        leakGraceSeconds: 60,
        dryRun: false,
      });
      expect(o.releaseDelay).to.deep.equal({ kind: 'fixed', seconds: 0 });
    });

    it('prefers flags over the environment and leaves kubeconfig out for in-cluster', () => {
      const o = resolveSidecarOptions(
        {
          nodeName: 'aks-1',
          releaseDelay: '30',
          leakGrace: '2.5',
          subnetState: 'any',
          dryRun: true,
        },
        { NODENAME: 'other' },
      );
      expect(o.nodeName).to.equal('aks-1');
      expect(o.kubeconfig).to.equal(undefined);
      expect(o.releaseDelay).to.deep.equal({ kind: 'fixed', seconds: 30 });
      expect(
        resolveSidecarOptions({ nodeName: 'n', releaseDelay: 'auto' }, {}).releaseDelay,
      ).to.deep.equal({ kind: 'auto' });
      expect(o.leakGraceSeconds).to.equal(2.5);
      expect(o.idleBudget).to.equal(1.5);
      expect(resolveSidecarOptions({ nodeName: 'n', idleBudget: '1.2' }, {}).idleBudget).to.equal(
        1.2,
      );
      expect(o.subnetState).to.equal('any');
      expect(o.dryRun).to.equal(true);
    });

    for (const [flags, fragment] of [
      [{}, '--node-name is required'],
      [{ nodeName: 'Bad_Name' }, 'not a valid Kubernetes node name'],
      [{ nodeName: 'n', releaseDelay: '-1' }, '--release-delay'],
      [{ nodeName: 'n', releaseDelay: 'soon' }, '--release-delay'],
      [{ nodeName: 'n', idleBudget: '0.8' }, '--idle-budget must be a number >= 1'],
      [{ nodeName: 'n', idleBudget: 'lots' }, '--idle-budget must be a number >= 1'],
      [{ nodeName: 'n', leakGrace: '-1' }, '--leak-grace must be a number of seconds >= 0'],
      [{ nodeName: 'n', leakGrace: '' }, '--leak-grace'],
      [{ nodeName: 'n', subnetState: 'all' }, '--subnet-state'],
      [{ nodeName: 'n', logLevel: 'loud' }, '--log-level'],
      [{ nodeName: 'n', namespace: 'Kube_System' }, '--namespace'],
      [{ nodeName: 'n', listen: 'x:y' }, '--listen'],
    ] as const) {
      it(`rejects ${JSON.stringify(flags)} naming ${fragment}`, () => {
        expect(() => resolveSidecarOptions(flags, {}))
          .to.throw(ConfigError)
          .with.property('message')
          .that.contains(fragment);
      });
    }
  });
});
