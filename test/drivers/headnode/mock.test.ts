import { expect } from 'chai';

import { MockHeadnodeDriver } from '../../../drivers/headnode/mock';
import { HeadnodeError } from '../../../drivers/headnode/types';

/** Never aborts: these calls have no deadline. */
const live = new AbortController().signal;

describe('MockHeadnodeDriver', () => {
  let d: MockHeadnodeDriver;
  beforeEach(() => {
    d = new MockHeadnodeDriver({ images: ['ubuntu', 'centos'], firstVncPort: 6000 });
  });

  it('lists the configured images, sorted', async () => {
    expect(await d.listImages(live)).to.deep.equal(['centos', 'ubuntu']);
    expect(await new MockHeadnodeDriver().listImages(live)).to.deep.equal(['base-headnode']);
  });

  it('create needs a known image and is idempotent for the same image only', async () => {
    const err = await d.create('hn', 'debian', live).catch((e) => e);
    expect(err).to.be.instanceOf(HeadnodeError);
    expect(d.vm('hn')).to.equal(undefined);
    await d.create('hn', 'ubuntu', live);
    await d.create('hn', 'ubuntu', live);
    expect(d.vm('hn')).to.include({ baseImage: 'ubuntu', running: false, vncport: null });
    const again = await d.create('hn', 'centos', live).catch((e) => e);
    expect(again).to.be.instanceOf(HeadnodeError).with.property('message').that.matches(/already has a disk/);
  });

  it('start needs a disk, validates hnics, and hands out distinct fake VNC ports', async () => {
    expect(await d.start('nope', [], live).catch((e) => e)).to.be.instanceOf(HeadnodeError);
    await d.create('a', 'ubuntu', live);
    await d.create('b', 'ubuntu', live);
    expect(await d.start('a', [{ name: 'x', vlan: 4095 }], live).catch((e) => e)).to.be.instanceOf(HeadnodeError);
    expect(await d.start('a', [{ name: 'x', vlan: 1 }, { name: 'x', vlan: 2 }], live).catch((e) => e)).to.be.instanceOf(HeadnodeError);
    expect(d.vm('a')!.running).to.equal(false);
    const a = await d.start('a', [{ name: 'eth0', vlan: 100 }, { name: 'eth1', vlan: null }], live);
    const b = await d.start('b', [], live);
    expect(a).to.deep.equal({ running: true, vncport: 6000 });
    expect(b).to.deep.equal({ running: true, vncport: 6001 });
    expect(await d.status('a', live)).to.deep.equal(a);
    expect(d.vm('a')!.hnics).to.deep.equal([{ name: 'eth0', vlan: 100 }, { name: 'eth1', vlan: null }]);
    // Starting a running VM with the same NICs is a no-op.
    expect(await d.start('a', [{ name: 'eth0', vlan: 100 }, { name: 'eth1', vlan: null }], live)).to.deep.equal(a);
    expect(d.vm('a')!.boots).to.equal(1);
  });

  it('stop, status, destroy and close', async () => {
    await d.create('a', 'ubuntu', live);
    await d.create('b', 'centos', live);
    await d.start('a', [], live);
    await d.start('b', [], live);
    await d.stop('a', live);
    await d.stop('a', live);
    expect(await d.status('a', live)).to.deep.equal({ running: false, vncport: null });
    expect(await d.status('b', live)).to.have.property('running', true);
    await d.destroy('a', live);
    expect(d.vm('a')).to.equal(undefined);
    expect(await d.status('a', live)).to.deep.equal({ running: false, vncport: null });
    await d.destroy('a', live);
    await d.close(live);
    expect(await d.status('b', live)).to.deep.equal({ running: false, vncport: null });
  });

  it('recover adopts a running VM and reboots a crashed one', async () => {
    await d.create('a', 'ubuntu', live);
    const first = await d.start('a', [{ name: 'eth0', vlan: 7 }], live);
    expect(await d.recover('a', [{ name: 'eth0', vlan: 8 }], live)).to.deep.equal(first);
    expect(d.vm('a')).to.include({ boots: 1 });
    expect(d.vm('a')!.hnics).to.deep.equal([{ name: 'eth0', vlan: 8 }]);
    d.crash('a');
    expect(await d.status('a', live)).to.deep.equal({ running: false, vncport: null });
    const again = await d.recover('a', [{ name: 'eth0', vlan: 8 }], live);
    expect(again.running).to.equal(true);
    expect(again.vncport).to.not.equal(first.vncport);
    expect(d.vm('a')).to.include({ boots: 2 });
  });
});

describe('MockHeadnodeDriver with a delay', () => {
  it('ends its delay when the signal aborts: the call rejects with the reason and changes nothing', async () => {
    const d = new MockHeadnodeDriver({ delayMs: 5000 });
    await d.create('hn', 'base-headnode', live);
    const controller = new AbortController();
    const reason = new Error('deadline');
    const t0 = Date.now();
    setTimeout(() => controller.abort(reason), 50);
    expect(await d.start('hn', [], controller.signal).catch((e) => e)).to.equal(reason);
    expect(Date.now() - t0).to.be.below(1000);
    expect(d.vm('hn')).to.include({ running: false, boots: 0 });
    // An aborted signal: nothing happens at all.
    expect(await d.destroy('hn', controller.signal).catch((e) => e)).to.equal(reason);
    expect(d.vm('hn')).to.not.equal(undefined);
  });
});
