/**
 * HeadnodeControl with the mock driver: interrupted operations are finished (by the monitor or
 * by the next call), and a VM gone behind the service's back is recorded as died.
 */
import { expect } from 'chai';
import { startTestServer, must } from '../../helpers/server';
import type { MockHeadnodeDriver } from '../../../drivers/headnode/mock';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until<T>(what: string, f: () => Promise<T>, ok: (v: T) => boolean): Promise<T> {
  const deadline = Date.now() + 5000;
  for (;;) {
    const v = await f();
    if (ok(v)) return v;
    if (Date.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(v)}`);
    await sleep(20);
  }
}

describe('HeadnodeControl (mock driver)', () => {
  it('the monitor finishes a start whose outcome was never recorded', async () => {
    const ts = await startTestServer({ headnodeDriver: 'mock', headnodeCheckMs: 50 });
    await must(ts.api.put('/project/p'));
    await must(ts.api.put('/headnode/h', { project: 'p', base_img: 'base-headnode' }));
    // The intent is recorded, then nothing: as if recording the outcome had failed.
    await ts.world.headnodes.ask('h', { type: 'headnode.beginStart', by: 'test' });
    expect((await ts.api.get('/headnode/h')).body.status).to.equal('starting');
    const h = await until('h', async () => (await ts.api.get('/headnode/h')).body, (b) => b.status === 'running');
    expect(h.vncport).to.be.a('number');
    expect((ts.headnodes.driver as MockHeadnodeDriver).vm('h')?.running).to.equal(true);
  });

  it('the next start finishes an interrupted start and answers 200; a stop likewise', async () => {
    const ts = await startTestServer({ headnodeDriver: 'mock', headnodeCheckMs: 0 });
    await must(ts.api.put('/project/p'));
    await must(ts.api.put('/headnode/h', { project: 'p', base_img: 'base-headnode' }));
    await ts.world.headnodes.ask('h', { type: 'headnode.beginStart', by: 'test' });
    await must(ts.api.post('/headnode/h/start'));
    expect((await ts.api.get('/headnode/h')).body.status).to.equal('running');
    // Once running, a start is a 409 again.
    expect((await ts.api.post('/headnode/h/start')).status).to.equal(409);
    await ts.world.headnodes.ask('h', { type: 'headnode.beginStop', by: 'test' });
    expect((await ts.api.put('/headnode/h/hnic/e')).status).to.equal(409);
    await must(ts.api.post('/headnode/h/stop'));
    expect((await ts.api.get('/headnode/h')).body).to.include({ status: 'stopped', vncport: null });
    expect((ts.headnodes.driver as MockHeadnodeDriver).vm('h')?.running).to.equal(false);
  });

  it('the monitor records a VM that crashed as died, and leaves a running one alone', async () => {
    const ts = await startTestServer({ headnodeDriver: 'mock', headnodeCheckMs: 50 });
    await must(ts.api.put('/project/p'));
    for (const h of ['a', 'b']) {
      await must(ts.api.put(`/headnode/${h}`, { project: 'p', base_img: 'base-headnode' }));
      await must(ts.api.post(`/headnode/${h}/start`));
    }
    (ts.headnodes.driver as MockHeadnodeDriver).crash('a');
    const a = await until('a', async () => (await ts.api.get('/headnode/a')).body, (b) => b.status === 'died');
    expect(a.error).to.match(/without a stop call/);
    await sleep(200);
    expect((await ts.api.get('/headnode/b')).body.status).to.equal('running');
  });

  it('keeps hnic attachments of names containing "/" apart (a/b + c is not a + b/c)', async () => {
    const ts = await startTestServer({ headnodeDriver: 'mock', headnodeCheckMs: 0 });
    const api = ts.api;
    await must(api.put('/project/p'));
    await must(api.put('/network/w', { owner: 'p', access: 'p', net_id: '' }));
    for (const [h, nic] of [['a', 'b%2Fc'], ['a%2Fb', 'c']]) {
      await must(api.put(`/headnode/${h}`, { project: 'p', base_img: 'base-headnode' }));
      await must(api.put(`/headnode/${h}/hnic/${nic}`));
      await must(api.post(`/headnode/${h}/hnic/${nic}/connect_network`, { network: 'w' }));
    }
    await must(api.post('/headnode/a/hnic/b%2Fc/detach_network'));
    // a/b's hnic c still holds w.
    expect((await api.del('/network/w')).status).to.equal(409);
    expect((await api.get('/headnode/a%2Fb')).body.networks).to.deep.equal({ c: 'w' });
  });
});
