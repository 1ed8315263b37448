// One node's sync read top to bottom (scripts/sync-path.ts, `make
// sync-path`): from the queue's handler the calls go down through the
// lifecycle, the status round and the status gate, and never into a file already
// on the way down (docs/design/fulfiller.md#shape).
import { expect } from 'chai';
import { filesInOrder, mermaid, syncPath, treeText } from '../../scripts/sync-path.ts';

describe("one node's sync, drawn", function () {
  this.timeout(60_000);
  const steps = syncPath();

  it('follows the run down through node-sync, status-round and the status gate', () => {
    const files = filesInOrder(steps);
    for (const f of ['node-sync.ts', 'status-round.ts', 'status-gate.ts', 'lifecycle.ts'])
      expect(files, f).to.include(`src/fulfiller/${f}`);
    expect(files.indexOf('src/fulfiller/node-sync.ts')).to.be.below(
      files.indexOf('src/fulfiller/status-round.ts'),
    );
    // The run leaves through its ports: the backend and the NNC API are drawn, not followed.
    const ports = steps.filter((s) => s.kind === 'port').map((s) => s.name);
    expect(ports).to.include.members(['IpBackend.apply', 'NncStatusApi.replaceStatus']);
  });

  it('never returns to a file already left', () => {
    const returns = steps.filter((s) => s.returns).map((s) => `${s.file} ${s.name}`);
    expect(returns).to.deep.equal([]);
    expect(treeText(steps)).to.match(/returns to a file already left: 0$/);
    expect(mermaid(steps)).to.match(/^flowchart TD\n/);
  });
});
