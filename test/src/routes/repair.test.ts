import { expect } from 'chai';
import { ADMIN, startTestServer, TestServer, Client, must, makeNode, makeUser, mockSwitch, Creds, finished, committed, deadSwitch } from '../../helpers/server';
import { portId } from '../../../actors/ids';
import { SseStream } from '../../helpers/sse';
import { sleep, until } from '../../helpers/wait';

const PORT = portId('rs', 'gi1/0/1');

describe('admin repairs of network state', () => {
  let ts: TestServer;
  let api: Client;
  let member: Creds;
  let vlan: { w: number; t: number };
  before(async () => {
    ts = await startTestServer();
    api = ts.api;
    await must(api.put('/project/rp'));
    member = await makeUser(api, 'rp-member', 'pw', ['rp']);
    await must(api.put('/switch/rs', mockSwitch));
    await must(api.put('/switch/rs/port/gi1/0/1'));
    await makeNode(api, 'rn', ['eth0']);
    await must(api.post('/switch/rs/port/gi1/0/1/connect_nic', { node: 'rn', nic: 'eth0' }));
    await must(api.post('/project/rp/connect_node', { node: 'rn' }));
    await must(api.put('/network/rw', { owner: 'rp', access: 'rp', net_id: '' }));
    await must(api.put('/network/rt', { owner: 'rp', access: 'rp', net_id: '' }));
    const nets = (await api.get('/networks')).body;
    vlan = { w: Number(nets.rw.network_id), t: Number(nets.rt.network_id) };
    await finished(api, (await must(api.post('/node/rn/nic/eth0/connect_network', { network: 'rw' }), 202)).body.status_id);
    await finished(api, (await must(api.post('/node/rn/nic/eth0/connect_network', { network: 'rt', channel: `vlan/${vlan.t}` }), 202)).body.status_id);
    expect(ts.mockSwitch.port('rs', 'gi1/0/1')).to.deep.equal({ native: vlan.w, tagged: [vlan.t] });
  });

  it('re-applies a port\'s configuration from the service\'s state after drift', async () => {
    // The switch "reboots" and forgets the port's VLANs.
    const session = await ts.mockSwitch.open({ name: 'rs', type: 'mock', fields: {} }, new AbortController().signal);
    await session.resetPort('gi1/0/1');
    await session.addTagged('gi1/0/1', 3999);
    expect(ts.mockSwitch.port('rs', 'gi1/0/1')).to.deep.equal({ native: null, tagged: [3999] });
    const r = await api.post('/admin/node/rn/nic/eth0/reapply');
    expect(r.status).to.equal(202);
    const status = await finished(api, r.body.status_id);
    expect(status).to.include({ status: 'DONE', type: 'reapply_port' });
    expect(ts.mockSwitch.port('rs', 'gi1/0/1')).to.deep.equal({ native: vlan.w, tagged: [vlan.t] });
    expect((await api.get('/node/rn')).body.nics[0].networks).to.deep.equal({ 'vlan/native': 'rw', [`vlan/${vlan.t}`]: 'rt' });
  });

  it('force-detaches a network in the service\'s state only, the port in doubt of its VLAN until the switch confirms the set-back: the network is not deleted, nor its VLAN reused, before', async () => {
    // The switch answers no login until the test lets it: the set-back the force-detach queues waits.
    let letIn!: () => void;
    const gate = new Promise<void>((r) => (letIn = r));
    const open = ts.mockSwitch.open;
    ts.mockSwitch.open = async (info, signal) => {
      await gate;
      return open.call(ts.mockSwitch, info, signal);
    };
    const cleared = committed(ts, `port:${PORT}`, 'PortDoubtCleared');
    try {
      await must(api.post('/admin/node/rn/nic/eth0/force_detach', { network: 'rt' }));
      expect((await api.get('/node/rn')).body.nics[0].networks).to.deep.equal({ 'vlan/native': 'rw' });
      expect((await api.get('/network/rt/attachments')).body).to.deep.equal({});
      // The switch was not told, and the port still carries the VLAN (rw keeps it up).
      expect(ts.mockSwitch.port('rs', 'gi1/0/1').tagged).to.deep.equal([vlan.t]);
      expect(ts.world.rm.ports.get(PORT)!.doubt!.vlans).to.deep.equal([vlan.t]);
      // Deleted now, the network's VLAN could go to another project while the port carries it.
      const del = await api.del('/network/rt');
      expect(del.status).to.equal(409);
      expect(del.body.type).to.equal('BlockedError');
      expect(del.body.msg).to.match(new RegExp(`^port gi1/0/1 of switch rs may still carry VLAN ${vlan.t} of network rt`));
    } finally {
      ts.mockSwitch.open = open;
      letIn();
    }
    // The set-back removes the VLAN from the port, and the switch's confirmation clears the doubt.
    await cleared;
    expect(ts.mockSwitch.port('rs', 'gi1/0/1')).to.deep.equal({ native: vlan.w, tagged: [] });
    expect(ts.world.rm.ports.get(PORT)!.doubt).to.equal(undefined);
    await must(api.del('/network/rt'));
    // Another project's network that gets the VLAN does not reach rn.
    await must(api.put('/project/rq'));
    await must(api.put('/network/rq-net', { owner: 'admin', access: 'rq', net_id: String(vlan.t) }));
    expect(ts.mockSwitch.port('rs', 'gi1/0/1').tagged).to.deep.equal([]);
    expect((await api.post('/admin/node/rn/nic/eth0/force_detach', { network: 'rt' })).status).to.equal(409);
  });

  it('force-detaches a port\'s last network: the set-back takes its VLAN off the port, not only shuts it', async () => {
    await must(api.put('/switch/rl', mockSwitch));
    await must(api.put('/switch/rl/port/gi1/0/3'));
    await makeNode(api, 'rln', ['eth0']);
    await must(api.post('/switch/rl/port/gi1/0/3/connect_nic', { node: 'rln', nic: 'eth0' }));
    await must(api.post('/project/rp/connect_node', { node: 'rln' }));
    await must(api.put('/network/rl-net', { owner: 'rp', access: 'rp', net_id: '' }));
    await finished(api, (await must(api.post('/node/rln/nic/eth0/connect_network', { network: 'rl-net' }), 202)).body.status_id);
    const id = Number((await api.get('/networks')).body['rl-net'].network_id);
    expect(ts.mockSwitch.port('rl', 'gi1/0/3')).to.deep.equal({ native: id, tagged: [] });
    const cleared = committed(ts, `port:${portId('rl', 'gi1/0/3')}`, 'PortDoubtCleared');
    await must(api.post('/admin/node/rln/nic/eth0/force_detach', { network: 'rl-net' }));
    await cleared;
    expect(ts.mockSwitch.port('rl', 'gi1/0/3')).to.deep.equal({ native: null, tagged: [] });
  });

  it('force-detaches on a switch gone for good: the port stays in doubt, holding the network and the node, until an admin clears the doubt by hand (audited)', async () => {
    await must(api.put('/switch/rd', mockSwitch));
    await must(api.put('/switch/rd/port/gi1/0/2'));
    await makeNode(api, 'rdn', ['eth0']);
    await must(api.post('/switch/rd/port/gi1/0/2/connect_nic', { node: 'rdn', nic: 'eth0' }));
    await must(api.post('/project/rp/connect_node', { node: 'rdn' }));
    await must(api.put('/network/dw', { owner: 'rp', access: 'rp', net_id: '' }));
    await must(api.put('/network/dt', { owner: 'rp', access: 'rp', net_id: '' }));
    const vt = ts.world.rm.networks.get('dt')!.vlan;
    await finished(api, (await must(api.post('/node/rdn/nic/eth0/connect_network', { network: 'dw' }), 202)).body.status_id);
    await finished(api, (await must(api.post('/node/rdn/nic/eth0/connect_network', { network: 'dt', channel: `vlan/${vt}` }), 202)).body.status_id);
    const doubted = portId('rd', 'gi1/0/2');
    // The switch dies: every login fails.
    const dead = deadSwitch(ts, 'rd');
    try {
      await must(api.post('/admin/node/rdn/nic/eth0/force_detach', { network: 'dt' }));
      // Its set-back was tried, and failed: the port stays in doubt of the VLAN.
      await until('a login to rd', () => dead.logins() >= 1, 5000);
      await sleep(100);
      expect(ts.world.rm.ports.get(doubted)!.doubt!.vlans).to.deep.equal([vt]);
      expect((await api.del('/network/dt')).status).to.equal(409);
      // With its native network forgotten too, the node carries none: the doubt alone holds it.
      const vw = ts.world.rm.networks.get('dw')!.vlan;
      await must(api.post('/admin/node/rdn/nic/eth0/force_detach', { network: 'dw' }));
      expect(ts.world.rm.ports.get(doubted)!.doubt!.vlans).to.deep.equal([vw, vt]);
      const release = await api.post('/project/rp/detach_node', { node: 'rdn' });
      expect(release.status).to.equal(409);
      expect(release.body.msg).to.match(/^port gi1\/0\/2 of switch rd \(nic eth0 of node rdn\) is in doubt/);

      // The admin call, and its checks: admin → switch 404 → port 404 → not in doubt 409.
      const clear = (sw: string, port: string) => `/admin/switch/${sw}/port/${encodeURIComponent(port)}/clear_doubt`;
      expect((await api.post(clear('rd', 'gi1/0/2'), { x: 1 })).status).to.equal(400);
      expect((await api.with(member).post(clear('rd', 'gi1/0/2'))).status).to.equal(401);
      expect((await api.post(clear('nope', 'gi1/0/2'))).status).to.equal(404);
      expect((await api.post(clear('rd', 'gi1/0/9'))).status).to.equal(404);
      expect((await api.post('/admin/switch/rd/port/gi1%2F0%2F2/clear_it')).status).to.equal(404);
      const notInDoubt = await api.post(clear('rs', 'gi1/0/1'));
      expect(notInDoubt.status).to.equal(409);
      expect(notInDoubt.body).to.deep.equal({ type: 'IllegalStateError', msg: 'port gi1/0/1 of switch rs is not in doubt' });
      expect(ts.world.rm.ports.get(doubted)!.doubt!.vlans).to.deep.equal([vw, vt]);

      const stream = new SseStream(`${ts.url}/events?type=port.doubt_cleared_by_hand`, { as: ADMIN });
      expect(await stream.answered()).to.equal(200);
      await must(api.post(clear('rd', 'gi1/0/2')));
      expect(ts.world.rm.ports.get(doubted)!.doubt).to.equal(undefined);
      const [event] = await stream.count(1);
      stream.close();
      expect(event.data).to.deep.include({ by: 'admin', kind: 'port', name: doubted, type: 'port.doubt_cleared_by_hand', data: { vlans: [vw, vt] } });
      const audit = (await must(api.get(`/admin/audit?kind=port&name=${encodeURIComponent(doubted)}&limit=1`))).body.entries[0];
      expect(audit).to.deep.include({ by: 'admin', call: 'admin_clear_doubt' });
      expect(audit.event).to.deep.equal({ type: 'PortDoubtClearedByHand', vlans: [vw, vt] });
      expect((await api.post(clear('rd', 'gi1/0/2'))).status).to.equal(409);

      // The holds are gone: the network may be deleted, the node released.
      await must(api.del('/network/dt'));
      await must(api.del('/network/dw'));
      await must(api.post('/project/rp/detach_node', { node: 'rdn' }));
    } finally {
      dead.revive();
    }
  });

  it('a port whose doubt an admin cleared while its switch was only unreachable is still set back once the switch answers: its forgotten VLAN, given to another project since, does not stay on it', async () => {
    await must(api.put('/switch/rb', mockSwitch));
    await must(api.put('/switch/rb/port/gi1/0/4'));
    await makeNode(api, 'rbn', ['eth0']);
    await must(api.post('/switch/rb/port/gi1/0/4/connect_nic', { node: 'rbn', nic: 'eth0' }));
    await must(api.post('/project/rp/connect_node', { node: 'rbn' }));
    await must(api.put('/network/bw', { owner: 'rp', access: 'rp', net_id: '' }));
    await must(api.put('/network/bt', { owner: 'rp', access: 'rp', net_id: '' }));
    const vw = ts.world.rm.networks.get('bw')!.vlan;
    const vt = ts.world.rm.networks.get('bt')!.vlan;
    await finished(api, (await must(api.post('/node/rbn/nic/eth0/connect_network', { network: 'bw' }), 202)).body.status_id);
    await finished(api, (await must(api.post('/node/rbn/nic/eth0/connect_network', { network: 'bt', channel: `vlan/${vt}` }), 202)).body.status_id);
    const owed = portId('rb', 'gi1/0/4');
    const attention = async () => ((await must(api.get('/admin/nodes/attention'))).body as { problem: string; switch?: string; port?: string; node: string | null }[])
      .filter((a) => a.switch === 'rb' && a.port === 'gi1/0/4').map((a) => ({ problem: a.problem, node: a.node }));
    // The switch is unreachable for a while (not gone for good): every login fails.
    const dead = deadSwitch(ts, 'rb');
    try {
      await must(api.post('/admin/node/rbn/nic/eth0/force_detach', { network: 'bt' }));
      await until('a login to rb', () => dead.logins() >= 1, 5000);
      expect(await attention()).to.deep.equal([{ problem: 'port_in_doubt', node: 'rbn' }]);
      // An admin takes the switch for gone and clears the doubt: the holds end with it.
      await must(api.post(`/admin/switch/rb/port/${encodeURIComponent('gi1/0/4')}/clear_doubt`));
      expect(ts.world.rm.ports.get(owed)!.doubt).to.equal(undefined);
      expect(ts.world.rm.ports.get(owed)!.setBackOwed!.vlans).to.deep.equal([vt]);
      expect(await attention()).to.deep.equal([{ problem: 'port_set_back_owed', node: 'rbn' }]);
      await must(api.del('/network/bt'));
      // Another project's network gets the VLAN, while the switch still carries it on rbn's port.
      await must(api.put('/project/rbq'));
      await must(api.put('/network/rbq-net', { owner: 'admin', access: 'rbq', net_id: String(vt) }));
      expect(ts.mockSwitch.port('rb', 'gi1/0/4').tagged).to.deep.equal([vt]);
    } finally {
      dead.revive();
    }
    // The switch answers again: the set-back, retried with backoff, takes the VLAN off the port.
    await until('the forgotten VLAN off the port', () => !ts.mockSwitch.port('rb', 'gi1/0/4').tagged.includes(vt), 20_000);
    expect(ts.mockSwitch.port('rb', 'gi1/0/4')).to.deep.equal({ native: vw, tagged: [] });
    await until('the set-back no longer owed', () => !ts.world.rm.ports.get(owed)!.setBackOwed, 5000);
    expect(await attention()).to.deep.equal([]);
  });

  it('is for admins only, and checks its objects', async () => {
    expect((await api.with(member).post('/admin/node/rn/nic/eth0/reapply')).status).to.equal(401);
    expect((await api.with(member).post('/admin/node/rn/nic/eth0/force_detach', { network: 'rw' })).status).to.equal(401);
    expect((await api.post('/admin/node/nope/nic/eth0/reapply')).status).to.equal(404);
    expect((await api.post('/admin/node/rn/nic/nope/force_detach', { network: 'rw' })).status).to.equal(404);
    expect((await api.post('/admin/node/rn/nic/eth0/force_detach', {})).status).to.equal(400);
    expect((await api.get('/node/rn')).body.nics[0].networks).to.deep.equal({ 'vlan/native': 'rw' });
  });
});
