import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MockSwitchDriver } from '../../../drivers/switch/mock';
import { SwitchError } from '../../../drivers/switch/types';

const info = { name: 'sw1', type: 'mock', fields: {} };

describe('MockSwitchDriver', () => {
  let dir: string;
  beforeEach(() => { dir = mkdtempSync(join(tmpdir(), 'hilt-mocksw-')); });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('keeps native and tagged VLANs per port, and persists them across restarts', async () => {
    let d = new MockSwitchDriver({ path: dir });
    const s = await d.open(info);
    await s.setNative('gi1/0/1', 100);
    await s.addTagged('gi1/0/1', 300);
    await s.addTagged('gi1/0/1', 200);
    await s.addTagged('gi1/0/1', 200);
    expect(await s.getPortVlans('gi1/0/1')).to.deep.equal({ native: 100, tagged: [200, 300] });
    await s.removeTagged('gi1/0/1', 300);
    await s.close();
    await d.close();
    d = new MockSwitchDriver({ path: dir });
    expect(d.port('sw1', 'gi1/0/1')).to.deep.equal({ native: 100, tagged: [200] });
    expect(d.ports('sw1')).to.have.keys('gi1/0/1');
    const s2 = await d.open(info);
    await s2.removeNative('gi1/0/1');
    expect(d.port('sw1', 'gi1/0/1')).to.deep.equal({ native: null, tagged: [200] });
    await s2.resetPort('gi1/0/1');
    expect(d.port('sw1', 'gi1/0/1')).to.deep.equal({ native: null, tagged: [] });
    await d.close();
  });

  it('applies the configured delay per operation and fails the injected ports', async () => {
    const d = new MockSwitchDriver({ path: dir, delayMs: 80, failPorts: ['sw1/gi1/0/9'] });
    const s = await d.open(info);
    const t = Date.now();
    await s.setNative('gi1/0/1', 5);
    expect(Date.now() - t).to.be.at.least(75);
    const err = await s.setNative('gi1/0/9', 5).catch((e) => e);
    expect(err).to.be.instanceOf(SwitchError);
    expect(d.port('sw1', 'gi1/0/9')).to.deep.equal({ native: null, tagged: [] });
    await d.close();
  });
});
