import { expect } from 'chai';
import { chmodSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServerProcess } from '../../helpers/process';
import { Client, must, obm, mockSwitch } from '../../helpers/server';

const admin = { user: 'root', password: 'root-pw' };

describe('durability of acknowledged changes (kill -9)', function () {
  this.timeout(60_000);
  let dir: string;
  beforeEach(() => { dir = mkdtempSync(join(tmpdir(), 'hilt-kill-')); });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('finds every acknowledged change after SIGKILL and restart on the same data folder', async () => {
    const env = { HILT_DATA_DIR: dir, HILT_ADMIN_USER: admin.user, HILT_ADMIN_PASSWORD: admin.password };
    const first = await startServerProcess(env);
    const api = new Client(first.url, admin);
    await must(api.put('/project/kp'));
    await must(api.put('/switch/ks', mockSwitch));
    await must(api.put('/switch/ks/port/gi1/0/1'));
    await must(api.put('/auth/basic/user/ku', { password: 'ku-pw' }));
    await must(api.post('/auth/basic/user/ku/add_project', { project: 'kp' }));
    await must(api.put('/network/kw', { owner: 'kp', access: 'kp', net_id: '' }));

    // A burst of concurrent registrations, killed right after the last acknowledgement.
    const acked: string[] = [];
    await Promise.all(Array.from({ length: 300 }, async (_, i) => {
      const r = await api.put(`/node/k${i}`, { obm: obm(`bmc${i}`) });
      if (r.status === 200) acked.push(`k${i}`);
    }));
    await must(api.put('/node/k0/nic/eth0', { macaddr: 'mac0' }));
    await must(api.post('/switch/ks/port/gi1/0/1/connect_nic', { node: 'k0', nic: 'eth0' }));
    await must(api.post('/project/kp/connect_node', { node: 'k1' }));
    await must(api.del('/node/k2'));
    first.child.kill('SIGKILL');
    expect(await first.exited).to.equal('SIGKILL');

    const second = await startServerProcess(env);
    const api2 = new Client(second.url, admin);
    const all = (await api2.get('/nodes/all')).body as string[];
    expect(acked).to.have.length(300);
    expect(all).to.have.members(acked.filter((n) => n !== 'k2'));
    expect((await api2.get('/node/k1')).body.project).to.equal('kp');
    expect((await api2.get('/switch/ks/port/gi1/0/1')).body).to.deep.equal({ node: 'k0', nic: 'eth0', networks: {} });
    expect((await api2.get('/networks')).body.kw).to.deep.equal({ network_id: '1000', projects: ['kp'] });
    // The user, its membership and its password survived too.
    const ku = api2.with({ user: 'ku', password: 'ku-pw' });
    expect((await ku.get('/project/kp/nodes')).body).to.deep.equal(['k1']);
    // The bootstrap admin is not re-created over the existing users.
    expect(second.output()).to.not.include('created the bootstrap admin');
    second.child.kill('SIGTERM');
    expect(await second.exited).to.equal(0);
  });

  it('generates and prints a bootstrap admin password once when none is configured', async () => {
    const first = await startServerProcess({ HILT_DATA_DIR: dir });
    const m = /created the bootstrap admin "admin" with password: (\S+)/.exec(first.output());
    expect(m, first.output()).to.not.equal(null);
    const api = new Client(first.url, { user: 'admin', password: m![1] });
    await must(api.get('/projects'));
    // The password is printed on the terminal, never in a JSON log line.
    for (const line of first.output().split('\n').filter((l) => l.startsWith('{'))) expect(line).to.not.include(m![1]);
    first.child.kill('SIGTERM');
    expect(await first.exited).to.equal(0);
    const second = await startServerProcess({ HILT_DATA_DIR: dir });
    expect(second.output()).to.not.include('created the bootstrap admin');
    await must(new Client(second.url, { user: 'admin', password: m![1] }).get('/projects'));
    second.child.kill('SIGTERM');
    await second.exited;
  });

  it('keeps secrets out of the logs', async () => {
    const env = { HILT_DATA_DIR: dir, HILT_ADMIN_USER: admin.user, HILT_ADMIN_PASSWORD: admin.password, HILT_LOG_LEVEL: 'trace' };
    const p = await startServerProcess(env);
    const api = new Client(p.url, admin);
    await must(api.put('/node/s1', { obm: obm() }));
    await must(api.put('/switch/s', mockSwitch));
    await must(api.put('/auth/basic/user/x', { password: 'user-secret-pw' }));
    await api.with({ user: 'x', password: 'wrong-secret-pw' }).get('/nodes/all');
    p.child.kill('SIGTERM');
    await p.exited;
    const log = p.output();
    expect(log).to.include('"reqId"');
    for (const secret of ['obm-secret', 'switch-secret', 'user-secret-pw', 'wrong-secret-pw', admin.password, Buffer.from(`${admin.user}:${admin.password}`).toString('base64')]) {
      expect(log).to.not.include(secret);
    }
  });

  it('keeps its data folder (credentials inside) closed to other users, new or existing', async () => {
    const fresh = join(dir, 'fresh');
    chmodSync(dir, 0o755); // an existing folder that others may read
    for (const d of [fresh, dir]) {
      const p = await startServerProcess({ HILT_DATA_DIR: d, HILT_ADMIN_USER: admin.user, HILT_ADMIN_PASSWORD: admin.password });
      p.child.kill('SIGTERM');
      await p.exited;
      expect(statSync(d).mode & 0o777, d).to.equal(0o700);
    }
  });
});
