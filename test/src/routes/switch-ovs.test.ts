/**
 * The Open vSwitch switch driver against a real Open vSwitch (ovsdb-server + ovs-vswitchd with
 * the userspace datapath, test/helpers/ovs.ts), over HTTP: an `…/switches/ovs` switch on the
 * private OVS's bridge, ports created on it here (internal ports), each operation read back
 * with ovs-vsctl; port_revert; the driver's read-back of each change; a missing bridge or port;
 * the drift audit and its repair. One private OVS for the whole file (only one can run per
 * host, and the headnode tests need it too).
 */
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { startPrivateOvs, type PrivateOvs } from '../../helpers/ovs';
import { startTestServer, stopTestServer, TestServer, Client, must, makeNode, finished } from '../../helpers/server';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { OvsSwitchDriver } from '../../../drivers/switch/ovs';
import { SwitchError } from '../../../drivers/switch/types';

const OVS_SWITCH = 'http://schema.massopencloud.org/haas/v0/switches/ovs';

describe('Open vSwitch switches over HTTP (real Open vSwitch)', function () {
  this.timeout(60_000);
  let ovs: PrivateOvs;
  let ts: TestServer;
  let api: Client;
  let vlan: { w: number; t: number; u: number };
  // Internal ports (host devices while the OVS runs): names unique to this run.
  const tag = randomBytes(3).toString('hex');
  const port = (n: number) => `h${tag}p${n}`;
  /** `tag trunks vlan_mode` of a port, as ovs-vsctl prints them. */
  const columns = async (p: string) => (await ovs.vsctl(['get', 'Port', p, 'tag', 'trunks', 'vlan_mode'])).split('\n');
  const op = async (path: string, body: unknown) => finished(api, (await must(api.post(path, body), 202)).body.status_id);
  const networks = async (node: string) => (await must(api.get(`/node/${node}`))).body.nics[0].networks;

  before(async function () {
    this.timeout(240_000); // the private OVS waits for another test run's on this host
    ovs = await startPrivateOvs();
    for (let n = 1; n <= 5; n++) await ovs.vsctl(['add-port', ovs.bridge, port(n), '--', 'set', 'Interface', port(n), 'type=internal']);
    // The database socket given as unix:PATH (a bare path works too: test/drivers/switch/ovs.test.ts).
    ts = await startTestServer({ ovsDb: `unix:${ovs.dbSock}`, switchTimeoutMs: 10_000 });
    api = ts.api;
    await must(api.put('/project/op'));
    await must(api.put('/switch/ovs1', { type: OVS_SWITCH, ovs_bridge: ovs.bridge }));
    for (let n = 1; n <= 4; n++) {
      await must(api.put(`/switch/ovs1/port/${port(n)}`));
      await makeNode(api, `on${n}`, ['eth0']);
      await must(api.post(`/switch/ovs1/port/${port(n)}/connect_nic`, { node: `on${n}`, nic: 'eth0' }));
      await must(api.post('/project/op/connect_node', { node: `on${n}` }));
    }
    for (const w of ['ow', 'ot', 'ou']) await must(api.put(`/network/${w}`, { owner: 'op', access: 'op', net_id: '' }));
    const nets = (await api.get('/networks')).body;
    vlan = { w: Number(nets.ow.network_id), t: Number(nets.ot.network_id), u: Number(nets.ou.network_id) };
  });

  after(async function () {
    this.timeout(60_000);
    if (ts) await stopTestServer(ts).catch(() => undefined);
    if (ovs) await ovs.stop();
  });

  it('lists the ovs type among the active extensions', async () => {
    expect((await must(api.get('/active_extensions'))).body).to.include('hilt.switches.ovs');
  });

  it('refuses a bad bridge name and port names that are not OVS port names (400)', async () => {
    for (const body of [{ type: OVS_SWITCH, ovs_bridge: '-br' }, { type: OVS_SWITCH }, { type: OVS_SWITCH, ovs_bridge: 'br', hostname: 'h' }]) {
      const r = await api.put('/switch/ovs-bad', body);
      expect(r.status, JSON.stringify(body)).to.equal(400);
    }
    for (const p of ['gi1/0/1', '-x', 'a-name-longer-than-15']) {
      const r = await api.put(`/switch/ovs1/port/${encodeURIComponent(p)}`);
      expect(r.status, p).to.equal(400);
      expect(r.body.msg).to.match(/not a valid port name/);
    }
  });

  it('connects and detaches native and tagged networks, each read back from OVSDB', async () => {
    const p = port(1);
    expect(await op('/node/on1/nic/eth0/connect_network', { network: 'ow' })).to.include({ status: 'DONE' });
    expect(await columns(p)).to.deep.equal([String(vlan.w), '[]', 'access']);
    expect(await op('/node/on1/nic/eth0/connect_network', { network: 'ot', channel: `vlan/${vlan.t}` })).to.include({ status: 'DONE' });
    expect(await columns(p)).to.deep.equal([String(vlan.w), `[${vlan.t}]`, 'native-untagged']);
    expect(await op('/node/on1/nic/eth0/connect_network', { network: 'ou', channel: `vlan/${vlan.u}` })).to.include({ status: 'DONE' });
    expect(await columns(p)).to.deep.equal([String(vlan.w), `[${vlan.t}, ${vlan.u}]`, 'native-untagged']);
    expect(await op('/node/on1/nic/eth0/detach_network', { network: 'ow' })).to.include({ status: 'DONE' });
    expect(await columns(p)).to.deep.equal(['[]', `[${vlan.t}, ${vlan.u}]`, 'trunk']);
    expect(await op('/node/on1/nic/eth0/detach_network', { network: 'ot' })).to.include({ status: 'DONE' });
    expect(await op('/node/on1/nic/eth0/detach_network', { network: 'ou' })).to.include({ status: 'DONE' });
    // No VLAN: the dead VLAN only, never an empty trunk list (which OVS reads as every VLAN).
    expect(await columns(p)).to.deep.equal(['[]', '[4095]', 'trunk']);
    expect(await networks('on1')).to.deep.equal({});
  });

  it('keeps the ports of nics with no network apart: no frame of one reaches another (ovs-vswitchd\'s own forwarding)', async () => {
    // Ports 7 and 8: a network attached and detached (the service wrote "no VLAN"); port 9 on ow.
    // A switch of their own on the same bridge: the other tests count ovs1's ports.
    await must(api.put('/switch/ovs2', { type: OVS_SWITCH, ovs_bridge: ovs.bridge }));
    for (const n of [7, 8, 9]) {
      await ovs.vsctl(['add-port', ovs.bridge, port(n), '--', 'set', 'Interface', port(n), 'type=internal']);
      await must(api.put(`/switch/ovs2/port/${port(n)}`));
      await makeNode(api, `on${n}`, ['eth0']);
      await must(api.post(`/switch/ovs2/port/${port(n)}/connect_nic`, { node: `on${n}`, nic: 'eth0' }));
      await must(api.post('/project/op/connect_node', { node: `on${n}` }));
    }
    for (const n of [7, 8]) {
      expect(await op(`/node/on${n}/nic/eth0/connect_network`, { network: 'ot', channel: `vlan/${vlan.t}` })).to.include({ status: 'DONE' });
      expect(await op(`/node/on${n}/nic/eth0/detach_network`, { network: 'ot' })).to.include({ status: 'DONE' });
    }
    expect(await op('/node/on9/nic/eth0/connect_network', { network: 'ow' })).to.include({ status: 'DONE' });
    // Tagged with the VLAN every port without a network trunks, untagged, or tagged with a
    // tenant's VLAN: it reaches neither the other port without a network nor a tenant's port.
    // (Ports the service never set, as ovs-vsctl add-port left them, trunk every VLAN.)
    for (const v of [4095, null, vlan.w, vlan.t]) {
      for (const [from, to] of [[7, 8], [8, 7]]) {
        const reached = await ovs.floodsTo(port(from), v);
        expect(reached, `VLAN ${v} from ${port(from)}`).not.to.include.any.members([port(to), port(9)]);
      }
    }
    // A port the service holds empty whose neighbours could hear it reads back as drift.
    await ovs.vsctl(['set', 'Port', port(8), 'protected=false']);
    const audit = await must(api.get('/admin/switch/ovs2/drift'));
    const p8 = audit.body.ports.find((p: { port: string }) => p.port === port(8));
    expect(p8).to.deep.include({ status: 'drifted', actual: { native: null, tagged: [], other: ['shares the dead VLAN 4095 with every other port that carries no VLAN (protected false)'] } });
    await must(api.post('/admin/switch/ovs2/repair'));
    expect(await ovs.vsctl(['get', 'Port', port(8), 'protected'])).to.equal('true');
    // A port that gets a network is no longer protected: it talks with its VLAN's other ports.
    expect(await op('/node/on8/nic/eth0/connect_network', { network: 'ow' })).to.include({ status: 'DONE' });
    expect(await ovs.vsctl(['get', 'Port', port(8), 'protected'])).to.equal('false');
    expect(await ovs.floodsTo(port(8), null)).to.include(port(9));
    expect(await op('/node/on8/nic/eth0/detach_network', { network: 'ow' })).to.include({ status: 'DONE' });
  });

  it('reverts a port (port_revert): every network off the port and the nic', async () => {
    const p = port(2);
    await op('/node/on2/nic/eth0/connect_network', { network: 'ow' });
    await op('/node/on2/nic/eth0/connect_network', { network: 'ot', channel: `vlan/${vlan.t}` });
    expect(await columns(p)).to.deep.equal([String(vlan.w), `[${vlan.t}]`, 'native-untagged']);
    expect(await op(`/switch/ovs1/port/${p}/revert`, {})).to.include({ status: 'DONE', type: 'revert_port' });
    expect(await columns(p)).to.deep.equal(['[]', '[4095]', 'trunk']);
    expect(await networks('on2')).to.deep.equal({});
  });

  it('applies every change idempotently (the service repeats a pending one after a restart)', async () => {
    const driver = ts.drivers.switches.driver(OVS_SWITCH) as OvsSwitchDriver;
    const s = await driver.open({ name: 'ovs1', type: OVS_SWITCH, fields: { ovs_bridge: ovs.bridge } }, new AbortController().signal);
    const p = port(5);
    for (let i = 0; i < 2; i++) await s.setNative(p, 3001);
    for (let i = 0; i < 2; i++) await s.addTagged(p, 3002);
    expect(await columns(p)).to.deep.equal(['3001', '[3002]', 'native-untagged']);
    expect(await s.getPortVlans(p)).to.deep.equal({ native: 3001, tagged: [3002] });
    for (let i = 0; i < 2; i++) await s.removeTagged(p, 3002);
    for (let i = 0; i < 2; i++) await s.removeNative(p);
    expect(await columns(p)).to.deep.equal(['[]', '[4095]', 'trunk']);
    for (let i = 0; i < 2; i++) await s.resetPort(p);
    expect(await s.getPortVlans(p)).to.deep.equal({ native: null, tagged: [] });
    await s.close();
  });

  it('reads every change back: a write OVSDB did not keep fails the call, saying what it has', async () => {
    // A switch that says yes and does nothing: a wrapper of the real ovs-vsctl that answers the
    // next `set` with success without running it, once (while its mark file exists).
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hilt-ovs-swallow-'));
    const mark = path.join(dir, 'swallow-next-set');
    const wrapper = path.join(dir, 'ovs-vsctl');
    fs.writeFileSync(wrapper, `#!/bin/sh\nfor a; do if [ "$a" = set ] && [ -e '${mark}' ]; then rm -f '${mark}'; exit 0; fi; done\nexec ovs-vsctl "$@"\n`, { mode: 0o755 });
    const p = port(6);
    await ovs.vsctl(['add-port', ovs.bridge, p, '--', 'set', 'Interface', p, 'type=internal']);
    const driver = new OvsSwitchDriver({ db: ovs.dbSock, timeoutMs: 10_000, vsctlPath: wrapper });
    const s = await driver.open({ name: 'ovs1', type: OVS_SWITCH, fields: { ovs_bridge: ovs.bridge } }, new AbortController().signal);
    try {
      await s.resetPort(p);
      await s.setNative(p, 3003);
      fs.writeFileSync(mark, '');
      const sent = s.changesSent!;
      const err = await s.addTagged(p, 3004).then(() => null, (e: Error) => e);
      expect(err, 'the swallowed write is noticed').to.be.instanceOf(SwitchError);
      expect(err!.message).to.equal(`port ${p} does not read back as asked after "add tagged VLAN 3004": expected native 3003, tagged 3004, OVSDB has native 3003, tagged none`);
      // It was sent (the service then sets the port back).
      expect(s.changesSent).to.equal(sent + 1);
      expect(await columns(p)).to.deep.equal(['3003', '[]', 'access']);
      fs.writeFileSync(mark, '');
      expect((await s.resetPort(p).then(() => null, (e: Error) => e))?.message).to.match(/after "reset the port": expected native none, tagged none, OVSDB has native 3003, tagged none$/);
      // Without the mark, every write lands and reads back.
      await s.addTagged(p, 3004);
      expect(await columns(p)).to.deep.equal(['3003', '[3004]', 'native-untagged']);
      await s.resetPort(p);
      expect(await columns(p)).to.deep.equal(['[]', '[4095]', 'trunk']);
    } finally {
      await s.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('ends an operation ERROR with a clear reason when the port is not on the bridge, nic networks unchanged', async () => {
    const ghost = `h${tag}gh`;
    await must(api.put(`/switch/ovs1/port/${ghost}`));
    await makeNode(api, 'on-ghost', ['eth0']);
    await must(api.post(`/switch/ovs1/port/${ghost}/connect_nic`, { node: 'on-ghost', nic: 'eth0' }));
    await must(api.post('/project/op/connect_node', { node: 'on-ghost' }));
    const status = await op('/node/on-ghost/nic/eth0/connect_network', { network: 'ow' });
    expect(status).to.include({ status: 'ERROR' });
    expect(status.error).to.match(new RegExp(`port ${ghost} is not on Open vSwitch bridge ${ovs.bridge} \\(it does not exist\\)`));
    expect(await networks('on-ghost')).to.deep.equal({});
  });

  it('ends an operation ERROR with a clear reason when the bridge does not exist, nic networks unchanged', async () => {
    await must(api.put('/switch/ovs-nobr', { type: OVS_SWITCH, ovs_bridge: `h${tag}nobr` }));
    await must(api.put(`/switch/ovs-nobr/port/${port(5)}`));
    await makeNode(api, 'on-nobr', ['eth0']);
    await must(api.post(`/switch/ovs-nobr/port/${port(5)}/connect_nic`, { node: 'on-nobr', nic: 'eth0' }));
    await must(api.post('/project/op/connect_node', { node: 'on-nobr' }));
    const status = await op('/node/on-nobr/nic/eth0/connect_network', { network: 'ow' });
    expect(status).to.include({ status: 'ERROR' });
    expect(status.error).to.match(new RegExp(`Open vSwitch bridge h${tag}nobr does not exist`));
    expect(await networks('on-nobr')).to.deep.equal({});
    // The drift audit of that switch cannot log in either: 502 with the reason.
    const r = await api.get('/admin/switch/ovs-nobr/drift');
    expect(r.status).to.equal(502);
    expect(r.body).to.deep.equal({ type: 'SwitchError', msg: `switch ovs-nobr cannot be reached: Open vSwitch bridge h${tag}nobr does not exist` });
  });

  it('audits drift made with ovs-vsctl behind the service\'s back, and repairs it', async () => {
    // Port 3: native ow and tagged ot; port 4: tagged ot only.
    await op('/node/on3/nic/eth0/connect_network', { network: 'ow' });
    await op('/node/on3/nic/eth0/connect_network', { network: 'ot', channel: `vlan/${vlan.t}` });
    await op('/node/on4/nic/eth0/connect_network', { network: 'ot', channel: `vlan/${vlan.t}` });
    let audit = await must(api.get('/admin/switch/ovs1/drift'));
    expect(audit.body.summary).to.deep.include({ drifted: 0, unreadable: 1 }); // the ghost port
    // Someone empties port 3's trunk list (OVS: every VLAN) and tags port 4 by hand.
    await ovs.vsctl(['set', 'Port', port(3), 'trunks=[]']);
    await ovs.vsctl(['set', 'Port', port(4), `tag=${vlan.u}`, 'vlan_mode=native-untagged']);
    audit = await must(api.get('/admin/switch/ovs1/drift'));
    const byPort = Object.fromEntries(audit.body.ports.map((p: { port: string }) => [p.port, p]));
    expect(audit.body.ports.filter((p: { status: string }) => p.status === 'drifted').map((p: { port: string }) => p.port)).to.deep.equal([port(3), port(4)]);
    expect(byPort[port(3)]).to.deep.include({
      expected: { native: vlan.w, tagged: [vlan.t] },
      actual: { native: vlan.w, tagged: [], other: ['trunks every VLAN (trunks empty)'] },
    });
    expect(byPort[port(3)].differences).to.deep.equal([`tagged VLANs the switch lacks: ${vlan.t}`, 'the switch has: trunks every VLAN (trunks empty)']);
    expect(byPort[port(4)].differences).to.deep.equal([`native VLAN: the service holds none, the switch has ${vlan.u}`]);
    expect(byPort[`h${tag}gh`]).to.deep.include({ status: 'unreadable', actual: null });
    expect(byPort[`h${tag}gh`].error).to.match(/does not exist/);

    const repair = await must(api.post('/admin/switch/ovs1/repair'));
    expect(repair.body.summary).to.deep.equal({ in_sync: 2, repaired: 2, pending: 0, failed: 1 });
    expect(await columns(port(3))).to.deep.equal([String(vlan.w), `[${vlan.t}]`, 'native-untagged']);
    expect(await columns(port(4))).to.deep.equal(['[]', `[${vlan.t}]`, 'trunk']);
    expect((await must(api.get('/admin/switch/ovs1/drift'))).body.summary).to.deep.equal({ in_sync: 4, drifted: 0, pending: 0, unreadable: 1 });
  });
});
