import { expect } from 'chai';

import { MockHeadnodeDriver } from '../../../drivers/headnode/mock';
import { HeadnodeError } from '../../../drivers/headnode/types';

describe('MockHeadnodeDriver', () => {
  let d: MockHeadnodeDriver;
  beforeEach(() => {
    d = new MockHeadnodeDriver({ images: ['ubuntu', 'centos'], firstVncPort: 6000 });
  });

  it('lists the configured images, sorted', async () => {
    expect(await d.listImages()).to.deep.equal(['centos', 'ubuntu']);
    expect(await new MockHeadnodeDriver().listImages()).to.deep.equal(['base-headnode']);
  });

  it('create needs a known image and is idempotent for the same image only', async () => {
    const err = await d.create('hn', 'debian').catch((e) => e);
    expect(err).to.be.instanceOf(HeadnodeError);
    expect(d.vm('hn')).to.equal(undefined);
    await d.create('hn', 'ubuntu');
    await d.create('hn', 'ubuntu');
    expect(d.vm('hn')).to.include({ baseImage: 'ubuntu', running: false, vncport: null });
    const again = await d.create('hn', 'centos').catch((e) => e);
    expect(again).to.be.instanceOf(HeadnodeError).with.property('message').that.matches(/already has a disk/);
  });

  it('start needs a disk, validates hnics, and hands out distinct fake VNC ports', async () => {
    expect(await d.start('nope', []).catch((e) => e)).to.be.instanceOf(HeadnodeError);
    await d.create('a', 'ubuntu');
    await d.create('b', 'ubuntu');
    expect(await d.start('a', [{ name: 'x', vlan: 4095 }]).catch((e) => e)).to.be.instanceOf(HeadnodeError);
    expect(await d.start('a', [{ name: 'x', vlan: 1 }, { name: 'x', vlan: 2 }]).catch((e) => e)).to.be.instanceOf(HeadnodeError);
    expect(d.vm('a')!.running).to.equal(false);
    const a = await d.start('a', [{ name: 'eth0', vlan: 100 }, { name: 'eth1', vlan: null }]);
    const b = await d.start('b', []);
    expect(a).to.deep.equal({ running: true, vncport: 6000 });
    expect(b).to.deep.equal({ running: true, vncport: 6001 });
    expect(await d.status('a')).to.deep.equal(a);
    expect(d.vm('a')!.hnics).to.deep.equal([{ name: 'eth0', vlan: 100 }, { name: 'eth1', vlan: null }]);
    // Starting a running VM with the same NICs is a no-op.
    expect(await d.start('a', [{ name: 'eth0', vlan: 100 }, { name: 'eth1', vlan: null }])).to.deep.equal(a);
    expect(d.vm('a')!.boots).to.equal(1);
  });

  it('stop, status, destroy and close', async () => {
    await d.create('a', 'ubuntu');
    await d.create('b', 'centos');
    await d.start('a', []);
    await d.start('b', []);
    await d.stop('a');
    await d.stop('a');
    expect(await d.status('a')).to.deep.equal({ running: false, vncport: null });
    expect(await d.status('b')).to.have.property('running', true);
    await d.destroy('a');
    expect(d.vm('a')).to.equal(undefined);
    expect(await d.status('a')).to.deep.equal({ running: false, vncport: null });
    await d.destroy('a');
    await d.close();
    expect(await d.status('b')).to.deep.equal({ running: false, vncport: null });
  });

  it('recover adopts a running VM and reboots a crashed one', async () => {
    await d.create('a', 'ubuntu');
    const first = await d.start('a', [{ name: 'eth0', vlan: 7 }]);
    expect(await d.recover('a', [{ name: 'eth0', vlan: 8 }])).to.deep.equal(first);
    expect(d.vm('a')).to.include({ boots: 1 });
    expect(d.vm('a')!.hnics).to.deep.equal([{ name: 'eth0', vlan: 8 }]);
    d.crash('a');
    expect(await d.status('a')).to.deep.equal({ running: false, vncport: null });
    const again = await d.recover('a', [{ name: 'eth0', vlan: 8 }]);
    expect(again.running).to.equal(true);
    expect(again.vncport).to.not.equal(first.vncport);
    expect(d.vm('a')).to.include({ boots: 2 });
  });
});
