/** The headnode driver registry: the one place that names the drivers HILT_HEADNODE_DRIVER selects. */
import * as path from 'node:path';
import { expect } from 'chai';

import { HEADNODE_DRIVERS } from '../../../drivers/headnode';
import { MockHeadnodeDriver } from '../../../drivers/headnode/mock';
import { QemuHeadnodeDriver } from '../../../drivers/headnode/qemu';
import { DEFAULTS, loadConfig, type Config } from '../../../src/config';
import { must, startTestServer } from '../../helpers/server';

describe('headnode drivers', () => {
  it('lists qemu and mock, each with its extension and no registration fields', () => {
    expect(HEADNODE_DRIVERS.types()).to.deep.equal(['qemu', 'mock']);
    expect(HEADNODE_DRIVERS.extensions()).to.deep.equal(['hilt.headnodes.qemu', 'hilt.headnodes.mock']);
    for (const type of HEADNODE_DRIVERS.types()) {
      expect(HEADNODE_DRIVERS.validate({ type })).to.deep.equal({ type, fields: {} });
      expect(HEADNODE_DRIVERS.validate({ type, bridge: 'br0' })).to.equal(`unexpected field(s) for ${type}: bridge`);
    }
  });

  it('builds each driver from the settings', () => {
    const config: Config = { ...DEFAULTS, dataDir: '/srv/hilt', ovsBridge: 'br-test', headnodeImagesDir: '/srv/images', baseImages: ['a', 'b'] };
    const qemu = HEADNODE_DRIVERS.get('qemu')!.create({ settings: config });
    expect(qemu).to.be.instanceOf(QemuHeadnodeDriver);
    expect(qemu).to.include({ stateDir: path.join('/srv/hilt', 'headnodes'), bridge: 'br-test', imagesDir: '/srv/images' });
    const mock = HEADNODE_DRIVERS.get('mock')!.create({ settings: config });
    expect(mock).to.be.instanceOf(MockHeadnodeDriver);
    return mock.listImages(new AbortController().signal).then((images) => expect(images).to.deep.equal(['a', 'b']));
  });

  it('is what the settings accept for HILT_HEADNODE_DRIVER', () => {
    expect(loadConfig({ HILT_HEADNODE_DRIVER: 'mock' }).headnodeDriver).to.equal('mock');
    expect(() => loadConfig({ HILT_HEADNODE_DRIVER: 'libvirt' })).to.throw(/HILT_HEADNODE_DRIVER must be one of qemu, mock/);
  });

  it('gives the service its driver and list_active_extensions its name', async () => {
    const ts = await startTestServer({ headnodeDriver: 'mock', headnodeCheckMs: 0 });
    expect(ts.headnodes.driver).to.be.instanceOf(MockHeadnodeDriver);
    const extensions = (await must(ts.api.get('/active_extensions'))).body as string[];
    expect(extensions.filter((e) => e.startsWith('hilt.headnodes.'))).to.deep.equal(['hilt.headnodes.mock']);
  });
});
