/**
 * A switch port in doubt (it may carry VLANs beyond its configuration after a failed change:
 * docs/actors.md, "Ports in doubt") over HTTP: network_delete of a network whose VLAN it may
 * carry and the release of its node are refused with 409 BlockedError, admins see it in
 * GET /admin/nodes/attention and in hilt_ports_in_doubt, and a set-back the switch confirms
 * lifts all of it.
 */
import { expect } from 'chai';
import { startTestServer, stopTestServer, TestServer, Client, must, makeNode, makeUser, mockSwitch, committed } from '../../helpers/server';
import { parseExposition, value } from '../../helpers/prometheus';
import { portId } from '../../../actors/ids';

describe('a switch port in doubt', function () {
  this.timeout(60_000);
  let ts: TestServer;
  let api: Client;
  const PORT = portId('s1', 'gi1/0/1');
  const inDoubt = async () => value(parseExposition((await must(api.get('/metrics'))).text), 'hilt_ports_in_doubt', { switch: 's1' });

  before(async () => {
    ts = await startTestServer();
    api = ts.api;
    await must(api.put('/project/p'));
    await must(api.put('/switch/s1', mockSwitch));
    await makeNode(api, 'n1', ['eth0']);
    await must(api.put('/switch/s1/port/gi1/0/1'));
    await must(api.post('/switch/s1/port/gi1/0/1/connect_nic', { node: 'n1', nic: 'eth0' }));
    await must(api.post('/project/p/connect_node', { node: 'n1' }));
    await must(api.put('/network/w', { owner: 'p', access: 'p', net_id: '' }));
    await must(api.put('/network/v', { owner: 'p', access: 'p', net_id: '' }));
  });
  after(() => stopTestServer(ts));

  it('holds the network of a VLAN it may carry and its node, shows in the attention list and the gauge, until a confirmed set-back clears it', async () => {
    const vlan = ts.world.rm.networks.get('w')!.vlan;
    // A change of VLAN w's failed after it may have reached the port, its set-back not confirmed.
    await ts.world.ports.ask(PORT, { type: 'port.doubt', by: 'switch', vlans: [vlan] });

    const del = await api.del('/network/w');
    expect(del.status).to.equal(409);
    expect(del.body.type).to.equal('BlockedError');
    expect(del.body.msg).to.equal(`port gi1/0/1 of switch s1 may still carry VLAN ${vlan} of network w (a change failed after it may have reached the port; it is being set back)`);
    // Another network's VLAN is not held.
    await must(api.del('/network/v'));
    const release = await api.post('/project/p/detach_node', { node: 'n1' });
    expect(release.status).to.equal(409);
    expect(release.body.type).to.equal('BlockedError');
    expect(release.body.msg).to.match(/^port gi1\/0\/1 of switch s1 \(nic eth0 of node n1\) is in doubt/);
    expect((await must(api.get('/project/p/nodes'))).body).to.include('n1');
    // A member is not told the wiring (docs/api-conventions.md §5): the same refusals without it.
    const member = api.with(await makeUser(api, 'pm', 'pw', ['p']));
    const refusals = [await member.del('/network/w'), await member.post('/project/p/detach_node', { node: 'n1' })];
    for (const r of refusals) {
      expect(r.status, r.text).to.equal(409);
      expect(r.body.type).to.equal('BlockedError');
      expect(r.body.msg).to.not.match(/gi1|s1/);
    }
    expect(refusals[0].body.msg).to.equal(`1 switch port may still carry VLAN ${vlan} of network w (a change failed after it may have reached the port; it is being set back)`);
    expect(refusals[1].body.msg).to.match(/^the port of nic eth0 of node n1 is in doubt/);

    const attention = (await must(api.get('/admin/nodes/attention'))).body;
    expect(attention).to.have.length(1);
    expect(attention[0]).to.deep.include({ node: 'n1', problem: 'port_in_doubt' });
    expect(attention[0].detail).to.match(new RegExp(`^port gi1/0/1 of switch s1 \\(nic eth0\\) may carry VLAN ${vlan} beyond what the service holds`));
    expect(await inDoubt()).to.equal(1);

    // The set-back: the switch reads back as held, and the doubt is cleared.
    const cleared = committed(ts, `port:${PORT}`, 'PortDoubtCleared');
    expect(await ts.world.ports.ask(PORT, { type: 'port.settle', by: 'switch' }, { hardware: true })).to.equal(null);
    await cleared;
    expect((await must(api.get('/admin/nodes/attention'))).body).to.deep.equal([]);
    expect(await inDoubt()).to.equal(0);
    await must(api.del('/network/w'));
    await must(api.post('/project/p/detach_node', { node: 'n1' }));
  });

  it('stays in the attention list and the gauge, naming the port, once its nic is deleted', async () => {
    // n1 is free now (the first test released it); its port is in doubt, then its nic goes.
    await ts.world.ports.ask(PORT, { type: 'port.doubt', by: 'switch', vlans: [3001] });
    await must(api.post('/switch/s1/port/gi1/0/1/detach_nic'));
    await must(api.del('/node/n1/nic/eth0'));
    expect(ts.world.rm.ports.get(PORT)!.wire).to.equal(null);

    const attention = (await must(api.get('/admin/nodes/attention'))).body;
    expect(attention).to.have.length(1);
    expect(attention[0]).to.deep.include({ node: null, problem: 'port_in_doubt', switch: 's1', port: 'gi1/0/1' });
    expect(attention[0].detail).to.match(/^port gi1\/0\/1 of switch s1 \(wired to no nic\) may carry VLAN 3001 beyond what the service holds/);
    expect(await inDoubt()).to.equal(1);
    expect((await api.del('/switch/s1/port/gi1/0/1')).status).to.equal(409);

    const cleared = committed(ts, `port:${PORT}`, 'PortDoubtCleared');
    expect(await ts.world.ports.ask(PORT, { type: 'port.settle', by: 'switch' }, { hardware: true })).to.equal(null);
    await cleared;
    expect((await must(api.get('/admin/nodes/attention'))).body).to.deep.equal([]);
    expect(await inDoubt()).to.equal(0);
    await must(api.del('/switch/s1/port/gi1/0/1'));
  });

  it('cannot be wired to another nic until a confirmed set-back clears it: that node would be on the VLAN it may carry', async () => {
    await must(api.put('/switch/s1/port/gi1/0/5'));
    await makeNode(api, 'n5', ['eth0']);
    await must(api.post('/project/p/connect_node', { node: 'n5' }));
    // The port's nic was deleted after a failed change; the port may still carry VLAN 3005.
    const doubted = portId('s1', 'gi1/0/5');
    await ts.world.ports.ask(doubted, { type: 'port.doubt', by: 'switch', vlans: [3005] });
    const wire = await api.post('/switch/s1/port/gi1/0/5/connect_nic', { node: 'n5', nic: 'eth0' });
    expect(wire.status).to.equal(409);
    expect(wire.body.type).to.equal('BlockedError');
    expect(wire.body.msg).to.match(/^port gi1\/0\/5 of switch s1 is in doubt/);
    expect(ts.world.rm.port('s1', 'gi1/0/5')!.wire).to.equal(null);

    const cleared = committed(ts, `port:${doubted}`, 'PortDoubtCleared');
    expect(await ts.world.ports.ask(doubted, { type: 'port.settle', by: 'switch' }, { hardware: true })).to.equal(null);
    await cleared;
    await must(api.post('/switch/s1/port/gi1/0/5/connect_nic', { node: 'n5', nic: 'eth0' }));
  });

  it('holds the release of a node whose nic of an earlier release is wired to two ports, the one in doubt not the indexed one', async () => {
    await makeNode(api, 'n2', ['eth0']);
    for (const p of ['gi1/0/2', 'gi1/0/3']) await must(api.put(`/switch/s1/port/${p}`));
    await must(api.post('/switch/s1/port/gi1/0/2/connect_nic', { node: 'n2', nic: 'eth0' }));
    await must(api.post('/project/p/connect_node', { node: 'n2' }));
    const doubted = portId('s1', 'gi1/0/2');
    await ts.world.ports.ask(doubted, { type: 'port.doubt', by: 'switch', vlans: [3002] });
    // Earlier releases could wire one nic to two ports: the second wire made on the port alone.
    await ts.world.ports.ask(portId('s1', 'gi1/0/3'), { type: 'port.wire', by: 'admin', node: 'n2', nic: 'eth0' });
    expect(ts.world.rm.wiring.port('n2', 'eth0')!.name, 'the index keeps the other').to.equal('gi1/0/3');

    const release = await api.post('/project/p/detach_node', { node: 'n2' });
    expect(release.status).to.equal(409);
    expect(release.body.msg).to.match(/^port gi1\/0\/2 of switch s1 \(nic eth0 of node n2\) is in doubt/);
    expect((await must(api.get('/project/p/nodes'))).body).to.include('n2');

    const cleared = committed(ts, `port:${doubted}`, 'PortDoubtCleared');
    expect(await ts.world.ports.ask(doubted, { type: 'port.settle', by: 'switch' }, { hardware: true })).to.equal(null);
    await cleared;
    await must(api.post('/project/p/detach_node', { node: 'n2' }));
  });

  it('holds the revoke of a project whose node\'s port may carry the network\'s VLAN, and a grant of a public network that would shut that node\'s project out', async () => {
    await makeNode(api, 'n3', ['eth0']);
    await must(api.put('/switch/s1/port/gi1/0/4'));
    await must(api.post('/switch/s1/port/gi1/0/4/connect_nic', { node: 'n3', nic: 'eth0' }));
    await must(api.post('/project/p/connect_node', { node: 'n3' }));
    await must(api.put('/project/q'));
    await must(api.put('/network/x', { owner: 'admin', access: 'p', net_id: '' }));
    await must(api.put('/network/y', { owner: 'admin', access: '', net_id: '' }));
    const vx = ts.world.rm.networks.get('x')!.vlan;
    const vy = ts.world.rm.networks.get('y')!.vlan;
    // n3's connects to x and y failed after they may have reached its port, their set-back not confirmed:
    // n3 (project p) may be on both networks.
    const doubted = portId('s1', 'gi1/0/4');
    await ts.world.ports.ask(doubted, { type: 'port.doubt', by: 'switch', vlans: [vx, vy] });

    // Revoked, p could no longer use x while its node may still be on it.
    const revoke = await api.del('/network/x/access/p');
    expect(revoke.status).to.equal(409);
    expect(revoke.body.type).to.equal('BlockedError');
    expect(revoke.body.msg).to.match(new RegExp(`^port gi1/0/4 of switch s1 \\(nic eth0 of node n3\\) may still carry VLAN ${vx} of network x`));
    // Granted to q alone, y would become q's while p's node may still be on it.
    const grant = await api.put('/network/y/access/q');
    expect(grant.status).to.equal(409);
    expect(grant.body.type).to.equal('BlockedError');
    // The owner's member is not told the wiring.
    await must(api.put('/network/qz', { owner: 'q', access: 'q', net_id: '' }));
    await must(api.put('/network/qz/access/p'));
    const qm = api.with(await makeUser(api, 'qm', 'pw', ['q']));
    await ts.world.ports.ask(doubted, { type: 'port.doubt', by: 'switch', vlans: [ts.world.rm.networks.get('qz')!.vlan] });
    const revoked = await qm.del('/network/qz/access/p');
    expect(revoked.status, revoked.text).to.equal(409);
    expect(revoked.body.msg).to.match(/^the port of nic eth0 of node n3 may still carry VLAN/);
    expect(revoked.body.msg).to.not.match(/gi1|s1/);
    expect((await must(api.get('/network/x'))).body.access).to.deep.equal(['p']);
    expect((await must(api.get('/network/y'))).body.access).to.equal(null);

    const cleared = committed(ts, `port:${doubted}`, 'PortDoubtCleared');
    expect(await ts.world.ports.ask(doubted, { type: 'port.settle', by: 'switch' }, { hardware: true })).to.equal(null);
    await cleared;
    await must(api.del('/network/x/access/p'));
    await must(api.put('/network/y/access/q'));
  });

  it('holds the deletion of a nic of a node in a project while its port is in doubt: the release would no longer see the port', async () => {
    await makeNode(api, 'n4', ['eth0']);
    await must(api.put('/switch/s1/port/gi1/0/6'));
    await must(api.post('/switch/s1/port/gi1/0/6/connect_nic', { node: 'n4', nic: 'eth0' }));
    await must(api.post('/project/p/connect_node', { node: 'n4' }));
    await must(api.put('/network/z', { owner: 'p', access: 'p', net_id: '' }));
    const vz = ts.world.rm.networks.get('qz')!.vlan;
    // n4's connect to z failed after it may have reached its port, the set-back not confirmed.
    const doubted = portId('s1', 'gi1/0/6');
    await ts.world.ports.ask(doubted, { type: 'port.doubt', by: 'switch', vlans: [vz] });

    // Deleted, the nic would take the port's wiring with it, and n4 could then pass to another
    // project while its cable is still in a port that may carry p's VLAN.
    const del = await api.del('/node/n4/nic/eth0');
    expect(del.status, del.text).to.equal(409);
    expect(del.body.type).to.equal('BlockedError');
    expect(del.body.msg).to.match(/^port gi1\/0\/6 of switch s1 \(nic eth0 of node n4\) is in doubt/);
    expect(ts.world.rm.ports.get(doubted)!.wire).to.deep.equal({ node: 'n4', nic: 'eth0' });
    expect((await api.post('/project/p/detach_node', { node: 'n4' })).status).to.equal(409);

    const cleared = committed(ts, `port:${doubted}`, 'PortDoubtCleared');
    expect(await ts.world.ports.ask(doubted, { type: 'port.settle', by: 'switch' }, { hardware: true })).to.equal(null);
    await cleared;
    await must(api.del('/node/n4/nic/eth0'));
    await must(api.post('/project/p/detach_node', { node: 'n4' }));
  });
});
