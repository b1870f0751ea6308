import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServerProcess } from '../../helpers/process';
import { Client, must } from '../../helpers/server';

const admin = { user: 'root', password: 'root-pw' };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * kill -9 while a start, a stop and a delete are under way (a slow mock headnode driver): after
 * the restart each one is finished as its recorded intent says. (The mock driver keeps its VMs
 * in memory, so after a restart every VM that should run is booted again.)
 */
describe('headnode operations survive kill -9', function () {
  this.timeout(60_000);
  let dir: string;
  beforeEach(() => { dir = mkdtempSync(join(tmpdir(), 'hilt-hnkill-')); });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('finishes an interrupted start, stop and delete at the next start', async () => {
    const env = { HILT_DATA_DIR: dir, HILT_ADMIN_USER: admin.user, HILT_ADMIN_PASSWORD: admin.password, HILT_HEADNODE_DRIVER: 'mock' };
    const first = await startServerProcess({ ...env, HILT_MOCK_HEADNODE_DELAY_MS: '1500' });
    const api = new Client(first.url, admin);
    await must(api.put('/project/kp'));
    await must(api.put('/network/kw', { owner: 'kp', access: 'kp', net_id: '' }));
    for (const h of ['ha', 'hb', 'hc']) {
      await must(api.put(`/headnode/${h}`, { project: 'kp', base_img: 'base-headnode' }));
      await must(api.put(`/headnode/${h}/hnic/eth0`));
    }
    await must(api.post('/headnode/ha/hnic/eth0/connect_network', { network: 'kw' }));
    await Promise.all(['hb', 'hc'].map((h) => must(api.post(`/headnode/${h}/start`))));

    // Under way when the process dies: start ha, stop hb, delete hc.
    // Their connections die with the process: their answers do not matter.
    const inflight = [api.post('/headnode/ha/start'), api.post('/headnode/hb/stop'), api.del('/headnode/hc')].map((p) => p.catch(() => undefined));
    const status = async (a: Client, h: string) => (await a.get(`/headnode/${h}`)).body.status;
    const deadline = Date.now() + 5000;
    while ((await status(api, 'ha')) !== 'starting' || (await status(api, 'hb')) !== 'stopping' || (await status(api, 'hc')) !== 'deleting') {
      if (Date.now() > deadline) throw new Error('the operations never showed their intent');
      await sleep(20);
    }
    first.child.kill('SIGKILL');
    await first.exited;
    await Promise.all(inflight);

    const second = await startServerProcess({ ...env, HILT_MOCK_HEADNODE_DELAY_MS: '50' });
    const api2 = new Client(second.url, admin);
    const until = Date.now() + 10_000;
    let seen: unknown[] = [];
    for (;;) {
      const [a, b, c] = await Promise.all(['ha', 'hb', 'hc'].map((h) => api2.get(`/headnode/${h}`)));
      seen = [a.body, b.body, c.status];
      if (a.body.status === 'running' && b.body.status === 'stopped' && c.status === 404) break;
      if (Date.now() > until) throw new Error(`not finished: ${JSON.stringify(seen)}`);
      await sleep(50);
    }
    const ha = (await api2.get('/headnode/ha')).body;
    expect(ha.vncport).to.be.a('number');
    expect(ha.networks).to.deep.equal({ eth0: 'kw' });
    // ha's start succeeded, so it is frozen now.
    expect((await api2.put('/headnode/ha/hnic/eth1')).status).to.equal(409);
    expect((await api2.get('/headnode/hb')).body).to.include({ vncport: null, error: null });
    // The journal tells the story, with the recovery as the acting user.
    const journal = (await must(api2.get('/admin/actors/headnode/ha/journal'))).body as { by: string; event: { type: string } }[];
    expect(journal.slice(0, 2).map((e) => [e.event.type, e.by])).to.deep.equal([['HeadnodeStarted', 'recovery'], ['HeadnodeStartRequested', admin.user]]);
    expect((await must(api2.get('/project/kp/headnodes'))).body).to.have.members(['ha', 'hb']);
    second.child.kill('SIGTERM');
    expect(await second.exited).to.equal(0);
  });
});
