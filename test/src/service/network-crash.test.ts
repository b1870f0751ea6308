import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServerProcess, ServerProcess } from '../../helpers/process';
import { Client, must, obm, mockSwitch } from '../../helpers/server';

const admin = { user: 'root', password: 'root-pw' };

/** SIGKILL the server once more than `min` of the actions are still PENDING. */
async function killWithPending(server: ServerProcess, api: Client, ids: string[], min: number): Promise<void> {
  const before = await Promise.all(ids.map(async (id) => (await api.get(`/networking_action/${id}`)).body.status));
  expect(before.filter((s) => s === 'PENDING').length, 'operations pending at the kill').to.be.above(min);
  server.child.kill('SIGKILL');
  await server.exited;
}

/** The statuses of the actions, once none is PENDING (or after 20 s). */
async function finished(api: Client, ids: string[]): Promise<{ status: string; type: string }[]> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const statuses = await Promise.all(ids.map(async (id) => (await api.get(`/networking_action/${id}`)).body));
    if (statuses.every((s) => s.status !== 'PENDING') || Date.now() > deadline) return statuses;
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('network operations survive kill -9', function () {
  this.timeout(90_000);
  let dir: string;
  beforeEach(() => { dir = mkdtempSync(join(tmpdir(), 'hilt-netkill-')); });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('resumes every pending operation after SIGKILL; each ends DONE and the service matches the switches', async () => {
    const env = { HILT_DATA_DIR: dir, HILT_ADMIN_USER: admin.user, HILT_ADMIN_PASSWORD: admin.password };
    // A slow switch: most operations are still pending when the process dies.
    const first = await startServerProcess({ ...env, HILT_MOCK_SWITCH_DELAY_MS: '400' });
    const api = new Client(first.url, admin);
    await must(api.put('/project/kp'));
    await must(api.put('/network/kw', { owner: 'kp', access: 'kp', net_id: '' }));
    await must(api.put('/network/kt', { owner: 'kp', access: 'kp', net_id: '' }));
    const vlan = { kw: Number((await api.get('/networks')).body.kw.network_id), kt: Number((await api.get('/networks')).body.kt.network_id) };
    const nodes = Array.from({ length: 8 }, (_, i) => `kn${i}`);
    for (const s of ['ks0', 'ks1']) await must(api.put(`/switch/${s}`, mockSwitch));
    for (const [i, n] of nodes.entries()) {
      await must(api.put(`/node/${n}`, { obm: obm() }));
      await must(api.put(`/node/${n}/nic/eth0`, { macaddr: 'm' }));
      const sw = `ks${i % 2}`;
      await must(api.put(`/switch/${sw}/port/gi1/0/${i}`));
      await must(api.post(`/switch/${sw}/port/gi1/0/${i}/connect_nic`, { node: n, nic: 'eth0' }));
      await must(api.post('/project/kp/connect_node', { node: n }));
    }
    const ids = await Promise.all(nodes.map(async (n, i) => {
      const r = await api.post(`/node/${n}/nic/eth0/connect_network`, i % 3 ? { network: 'kw' } : { network: 'kt', channel: `vlan/${vlan.kt}` });
      expect(r.status).to.equal(202);
      return r.body.status_id as string;
    }));
    await killWithPending(first, api, ids, 4);

    const second = await startServerProcess({ ...env, HILT_MOCK_SWITCH_DELAY_MS: '0' });
    const api2 = new Client(second.url, admin);
    const statuses = (await finished(api2, ids)).map((x) => x.status);
    expect(statuses).to.deep.equal(ids.map(() => 'DONE'));

    const mockPorts: Record<string, Record<string, { native: number | null; tagged: number[] }>> = {};
    for (const s of ['ks0', 'ks1']) mockPorts[s] = (await api2.get(`/admin/actors/switch/${s}`)).body.mockPorts;
    for (const [i, n] of nodes.entries()) {
      const nic = (await api2.get(`/node/${n}`)).body.nics[0];
      const port = mockPorts[`ks${i % 2}`][`gi1/0/${i}`];
      if (i % 3) {
        expect(nic.networks, n).to.deep.equal({ 'vlan/native': 'kw' });
        expect(port, n).to.deep.equal({ native: vlan.kw, tagged: [] });
      } else {
        expect(nic.networks, n).to.deep.equal({ [`vlan/${vlan.kt}`]: 'kt' });
        expect(port, n).to.deep.equal({ native: null, tagged: [vlan.kt] });
      }
    }
    // Each operation was recorded once: no duplicate statuses after the replay.
    for (const n of nodes) expect((await api2.get(`/node/${n}/networking_actions`)).body).to.have.length(1);
    second.child.kill('SIGTERM');
    expect(await second.exited).to.equal(0);
  });

  it('resumes pending detaches and port reverts after SIGKILL: each ends DONE, the nics and the ports are empty', async () => {
    const env = { HILT_DATA_DIR: dir, HILT_ADMIN_USER: admin.user, HILT_ADMIN_PASSWORD: admin.password };
    const setup = await startServerProcess({ ...env, HILT_MOCK_SWITCH_DELAY_MS: '0' });
    let api = new Client(setup.url, admin);
    await must(api.put('/project/kp'));
    await must(api.put('/network/kw', { owner: 'kp', access: 'kp', net_id: '' }));
    await must(api.put('/switch/ks', mockSwitch));
    const nodes = Array.from({ length: 6 }, (_, i) => `kn${i}`);
    for (const [i, n] of nodes.entries()) {
      await must(api.put(`/node/${n}`, { obm: obm() }));
      await must(api.put(`/node/${n}/nic/eth0`, { macaddr: 'm' }));
      await must(api.put(`/switch/ks/port/gi1/0/${i}`));
      await must(api.post(`/switch/ks/port/gi1/0/${i}/connect_nic`, { node: n, nic: 'eth0' }));
      await must(api.post('/project/kp/connect_node', { node: n }));
      const id = (await must(api.post(`/node/${n}/nic/eth0/connect_network`, { network: 'kw' }), 202)).body.status_id;
      while ((await api.get(`/networking_action/${id}`)).body.status === 'PENDING') await new Promise((r) => setTimeout(r, 10));
    }
    setup.child.kill('SIGTERM');
    await setup.exited;

    const first = await startServerProcess({ ...env, HILT_MOCK_SWITCH_DELAY_MS: '400' });
    api = new Client(first.url, admin);
    // Even nodes detach their network, odd ones have their port reverted by an admin.
    const ids = await Promise.all(nodes.map(async (n, i) => {
      const r = i % 2 ? await api.post(`/switch/ks/port/gi1/0/${i}/revert`) : await api.post(`/node/${n}/nic/eth0/detach_network`, { network: 'kw' });
      expect(r.status).to.equal(202);
      return r.body.status_id as string;
    }));
    await killWithPending(first, api, ids, 3);

    const second = await startServerProcess({ ...env, HILT_MOCK_SWITCH_DELAY_MS: '0' });
    api = new Client(second.url, admin);
    const statuses = await finished(api, ids);
    expect(statuses.map((s) => s.status)).to.deep.equal(ids.map(() => 'DONE'));
    expect(statuses.map((s) => s.type)).to.deep.equal(nodes.map((_, i) => (i % 2 ? 'revert_port' : 'modify_port')));
    const ports = (await api.get('/admin/actors/switch/ks')).body.mockPorts as Record<string, unknown>;
    for (const [i, n] of nodes.entries()) {
      expect((await api.get(`/node/${n}`)).body.nics[0].networks, n).to.deep.equal({});
      expect(ports[`gi1/0/${i}`], n).to.deep.equal({ native: null, tagged: [] });
    }
    // Nothing is attached any more: the network can go.
    await must(api.del('/network/kw'));
    second.child.kill('SIGTERM');
    expect(await second.exited).to.equal(0);
  });
});
