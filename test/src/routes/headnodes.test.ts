/**
 * Headnodes over HTTP with the real qemu driver: QEMU (TCG, 64 MiB, an empty base image) and a
 * private Open vSwitch (netdev datapath). These tests FAIL, never skip, without QEMU or OVS.
 */
import * as fs from 'node:fs';
import * as fsp from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { expect } from 'chai';

import { ADMIN, Client, Creds, TestServer, makeUser, must, startTestServer, stopTestServer } from '../../helpers/server';
import { makeBaseImage } from '../../helpers/images';
import { startPrivateOvs, type PrivateOvs } from '../../helpers/ovs';
import { alive, qemuProcesses, qmp, vncBanner, waitGone } from '../../helpers/vm';
import { QemuHeadnodeDriver } from '../../../drivers/headnode/qemu';
import type { Config } from '../../../src/config';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

describe('headnodes over HTTP (real QEMU + Open vSwitch)', function () {
  this.timeout(60_000);

  let tmp: string;
  let ovs: PrivateOvs;
  let ts: TestServer;
  let api: Client;
  let alice: Creds;
  let bob: Creds;
  let dataDir: string;
  const vlanOf: Record<string, number> = {};

  const settings = (): Partial<Config> => ({
    headnodeDriver: 'qemu', headnodeImagesDir: path.join(tmp, 'images'), ovsBridge: ovs.bridge, ovsDb: ovs.dbSock,
    headnodeMemoryMb: 64, headnodeCheckMs: 100,
    // missing-image is configured but has no file: a start of a headnode made from it fails.
    baseImages: ['base-headnode', 'missing-image'],
  });
  const driver = () => ts.headnodes.driver as QemuHeadnodeDriver;
  const as = (c: Creds | null) => api.with(c);
  const show = async (h: string) => (await must(api.get(`/headnode/${h}`))).body;
  const ports = async () => (await ovs.vsctl(['list-ports', ovs.bridge])).split('\n').filter(Boolean);
  const tag = (port: string) => ovs.vsctl(['get', 'port', port, 'tag']);
  const pid = async (h: string) => (await driver().processId(h))!;
  const killLeftovers = () => {
    if (tmp) for (const p of qemuProcesses(tmp)) process.kill(p, 'SIGKILL');
  };

  /** The call is refused with `status` and the headnode reads the same before and after. */
  async function refusedUnchanged(h: string, call: () => Promise<{ status: number; body: any }>, status: number) {
    const before = await show(h);
    const r = await call();
    expect(r.status, JSON.stringify(r.body)).to.equal(status);
    expect(r.body).to.have.keys('type', 'msg');
    expect(await show(h)).to.deep.equal(before);
    return r;
  }

  async function waitFor<T>(what: string, f: () => Promise<T>, ok: (v: T) => boolean, ms = 15_000): Promise<T> {
    const deadline = Date.now() + ms;
    for (;;) {
      const v = await f();
      if (ok(v)) return v;
      if (Date.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(v)} after ${ms} ms`);
      await sleep(50);
    }
  }

  before(async function () {
    tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'hilt-hnapi-'));
    await makeBaseImage(path.join(tmp, 'images'));
    await makeBaseImage(path.join(tmp, 'images'), 'dropped-in'); // offered without being configured
    ovs = await startPrivateOvs();
    process.on('exit', killLeftovers);
    dataDir = path.join(tmp, 'data');
    ts = await startTestServer(settings(), {}, dataDir);
    api = ts.api;
    for (const p of ['pa', 'pb']) await must(api.put(`/project/${p}`));
    alice = await makeUser(api, 'alice', 'alice-pw', ['pa']);
    bob = await makeUser(api, 'bob', 'bob-pw', ['pb']);
    await must(api.put('/network/pa-net', { owner: 'pa', access: 'pa', net_id: '' }));
    await must(api.put('/network/pa-two', { owner: 'pa', access: 'pa', net_id: '' }));
    await must(api.put('/network/pb-net', { owner: 'pb', access: 'pb', net_id: '' }));
    await must(api.put('/network/pub', { owner: 'admin', access: '', net_id: '' }));
    await must(api.put('/network/fixed', { owner: 'admin', access: 'pa', net_id: '3000' })); // admin-assigned id
    await must(api.put('/network/adm-pa', { owner: 'admin', access: 'pa', net_id: '' }));
    const nets = (await must(api.get('/networks'))).body;
    for (const [n, v] of Object.entries(nets)) vlanOf[n] = Number((v as { network_id: string }).network_id);
  });

  after(async function () {
    if (ts) {
      await ts.headnodes.driver.close(AbortSignal.timeout(30_000)).catch(() => undefined);
      await stopTestServer(ts, false).catch(() => undefined);
    }
    killLeftovers();
    process.off('exit', killLeftovers);
    if (ovs) await ovs.stop();
    if (tmp) await fsp.rm(tmp, { recursive: true, force: true });
  });

  describe('creating and changing a headnode before its first start', () => {
    it('lists the installed base images to any authenticated user', async () => {
      expect((await must(as(bob).get('/headnode_images'))).body).to.deep.equal(['base-headnode', 'dropped-in', 'missing-image']);
      expect((await as(null).get('/headnode_images')).status).to.equal(401);
    });

    it('checks headnode_create in order: base image 400, name 409, project 404, auth 401', async () => {
      // A base image that is not installed is a 400 before anything else, even for a stranger.
      for (const who of [alice, bob, ADMIN]) {
        const r = await as(who).put('/headnode/hn1', { project: 'nope', base_img: 'no-such-image' });
        expect(r.status).to.equal(400);
        expect(r.body.type).to.equal('BadArgumentError');
      }
      expect((await as(alice).put('/headnode/hn1', { project: 'nope', base_img: 'base-headnode' })).status).to.equal(404);
      expect((await as(bob).put('/headnode/hn1', { project: 'pa', base_img: 'base-headnode' })).status).to.equal(401);
      await must(as(alice).put('/headnode/hn1', { project: 'pa', base_img: 'base-headnode' }));
      // Names are global: another project's caller gets the 409 too.
      expect((await as(bob).put('/headnode/hn1', { project: 'pb', base_img: 'base-headnode' })).status).to.equal(409);
      expect(await show('hn1')).to.include({ name: 'hn1', project: 'pa', vncport: null, status: 'created' });
      expect((await show('hn1')).hnics).to.deep.equal([]);
      expect((await must(as(alice).get('/project/pa/headnodes'))).body).to.deep.equal(['hn1']);
      expect((await must(as(bob).get('/project/pb/headnodes'))).body).to.deep.equal([]);
    });

    it('refuses malformed bodies with 400', async () => {
      for (const body of [{}, { project: 'pa' }, { project: 'pa', base_img: 5 }, { project: null, base_img: 'base-headnode' }, { project: 'pa', base_img: 'base-headnode', x: 1 }]) {
        expect((await as(alice).put('/headnode/hnx', body)).status, JSON.stringify(body)).to.equal(400);
      }
      expect((await as(alice).post('/headnode/hn1/hnic/eth0/connect_network', { network: 'pa-net', channel: 'vlan/native' })).status).to.equal(400);
      expect((await as(alice).post('/headnode/hn1/start', { force: true })).status).to.equal(400);
      expect((await api.get('/headnodes')).status).to.equal(404);
    });

    it('creates and deletes hnics: 409 for a duplicate, 404 for an unknown one', async () => {
      for (const h of ['eth0', 'eth1', 'eth2', 'spare']) await must(as(alice).put(`/headnode/hn1/hnic/${h}`));
      await refusedUnchanged('hn1', () => as(alice).put('/headnode/hn1/hnic/eth0'), 409);
      await refusedUnchanged('hn1', () => as(alice).del('/headnode/hn1/hnic/nope'), 404);
      await must(as(alice).del('/headnode/hn1/hnic/spare'));
      expect((await show('hn1')).hnics).to.deep.equal(['eth0', 'eth1', 'eth2']);
    });

    it('checks connect_network in order: hnic 404, network 404, admin-assigned id 400, no access 409', async () => {
      await refusedUnchanged('hn1', () => as(alice).post('/headnode/hn1/hnic/nope/connect_network', { network: 'nope' }), 404);
      // The missing hnic answers first, whatever the network's name: even one no network can have.
      for (const network of ['nope', '', 'n'.repeat(300)]) {
        expect((await as(alice).post('/headnode/hn1/hnic/nope/connect_network', { network })).body.msg, network).to.match(/^hnic nope of headnode hn1 /);
      }
      await refusedUnchanged('hn1', () => as(alice).post('/headnode/hn1/hnic/eth0/connect_network', { network: 'nope' }), 404);
      await refusedUnchanged('hn1', () => as(alice).post('/headnode/hn1/hnic/eth0/connect_network', { network: 'fixed' }), 400);
      // The headnode's project has no access to pb-net, even for an admin caller.
      await refusedUnchanged('hn1', () => as(ADMIN).post('/headnode/hn1/hnic/eth0/connect_network', { network: 'pb-net' }), 409);
    });

    it('connects, reconnects, replaces and detaches networks on hnics', async () => {
      await must(as(alice).post('/headnode/hn1/hnic/eth0/connect_network', { network: 'pa-two' }));
      await must(as(alice).post('/headnode/hn1/hnic/eth0/connect_network', { network: 'pa-two' })); // again: 200
      await must(as(alice).post('/headnode/hn1/hnic/eth0/connect_network', { network: 'pa-net' })); // replaces
      await must(as(alice).post('/headnode/hn1/hnic/eth1/connect_network', { network: 'pub' }));
      await must(as(alice).post('/headnode/hn1/hnic/eth2/connect_network', { network: 'adm-pa' }));
      await must(as(alice).post('/headnode/hn1/hnic/eth2/detach_network'));
      await must(as(alice).post('/headnode/hn1/hnic/eth2/detach_network')); // nothing attached: still 200
      expect((await show('hn1')).networks).to.deep.equal({ eth0: 'pa-net', eth1: 'pub', eth2: null });
      // pa-two was released by the replacement: it can go.
      await must(as(alice).del('/network/pa-two'));
    });

    it('keeps attached networks and the headnode\'s project in place', async () => {
      await must(as(alice).post('/headnode/hn1/hnic/eth2/connect_network', { network: 'adm-pa' }));
      expect((await as(alice).del('/network/pa-net')).body).to.include({ type: 'BlockedError' });
      expect((await api.del('/network/pub')).status).to.equal(409);
      // Revoking pa's access to a network its headnode holds, or making a public one private
      // for another project, would leave the headnode attached without access.
      expect((await api.del('/network/adm-pa/access/pa')).status).to.equal(409);
      expect((await api.put('/network/pub/access/pb')).status).to.equal(409);
      expect((await api.del('/project/pa')).status).to.equal(409);
      await must(as(alice).post('/headnode/hn1/hnic/eth2/detach_network'));
    });

    it('a first start that fails answers 502 and leaves the headnode changeable, with the reason shown', async () => {
      await must(as(alice).put('/headnode/hnm', { project: 'pa', base_img: 'missing-image' }));
      await must(as(alice).put('/headnode/hnm/hnic/eth0'));
      const r = await as(alice).post('/headnode/hnm/start');
      expect(r.status).to.equal(502);
      expect(r.body.type).to.equal('HeadnodeError');
      expect(r.body.msg).to.match(/missing-image/);
      const h = await show('hnm');
      expect(h).to.include({ status: 'created', vncport: null });
      expect(h.error).to.match(/missing-image/);
      await must(as(alice).put('/headnode/hnm/hnic/eth1')); // not frozen
      expect(qemuProcesses(tmp)).to.deep.equal([]);
      await must(as(alice).del('/headnode/hnm'));
    });

    it('lets only the owning project and admins near a headnode', async () => {
      const calls: [string, string, unknown?][] = [
        ['GET', '/headnode/hn1'], ['POST', '/headnode/hn1/start'], ['POST', '/headnode/hn1/stop'], ['DELETE', '/headnode/hn1'],
        ['PUT', '/headnode/hn1/hnic/ethX'], ['DELETE', '/headnode/hn1/hnic/eth0'],
        ['POST', '/headnode/hn1/hnic/eth0/connect_network', { network: 'pb-net' }], ['POST', '/headnode/hn1/hnic/eth0/detach_network'],
        ['GET', '/project/pa/headnodes'],
      ];
      for (const who of [bob, { user: 'alice', password: 'wrong' }, null]) {
        for (const [method, p, body] of calls) {
          await refusedUnchanged('hn1', () => as(who).call(method, p, { body }), 401);
        }
      }
      // Missing headnodes are 404 before authorization.
      expect((await as(bob).get('/headnode/nope')).status).to.equal(404);
      expect((await as(bob).post('/headnode/nope/start')).status).to.equal(404);
      // An admin may, and so may the owner.
      await must(api.put('/headnode/hn1/hnic/byadmin'));
      await must(as(alice).del('/headnode/hn1/hnic/byadmin'));
    });
  });

  describe('running it', () => {
    let firstPid: number;

    it('starts a real VM: VNC listening, QMP running, each attached hnic a tap on OVS with its VLAN tag', async () => {
      await must(as(alice).post('/headnode/hn1/start'));
      const h = await show('hn1');
      expect(h).to.include({ status: 'running', error: null });
      expect(h.vncport).to.be.a('number').within(5900, 5999);
      expect(await vncBanner(h.vncport)).to.match(/^RFB 003\.008/);
      expect(await qmp(driver().qmpSocketPath('hn1'), 'query-status')).to.include({ running: true, status: 'running' });
      firstPid = await pid('hn1');
      expect(alive(firstPid)).to.equal(true);
      const d = driver();
      expect(await tag(d.tapName('hn1', 'eth0'))).to.equal(String(vlanOf['pa-net']));
      expect(await tag(d.tapName('hn1', 'eth1'))).to.equal(String(vlanOf['pub']));
      // eth2 has no network: a NIC with nothing behind it, not a port on the bridge.
      expect(await ports()).to.have.members([d.tapName('hn1', 'eth0'), d.tapName('hn1', 'eth1')]);
    });

    it('refuses every modification once started (409), and a second start', async () => {
      await refusedUnchanged('hn1', () => as(alice).put('/headnode/hn1/hnic/eth9'), 409);
      await refusedUnchanged('hn1', () => as(alice).del('/headnode/hn1/hnic/eth2'), 409);
      await refusedUnchanged('hn1', () => as(alice).post('/headnode/hn1/hnic/eth2/connect_network', { network: 'pa-net' }), 409);
      await refusedUnchanged('hn1', () => as(alice).post('/headnode/hn1/hnic/eth0/detach_network'), 409);
      await refusedUnchanged('hn1', () => api.post('/headnode/hn1/start'), 409);
      // Existence checks still come first.
      await refusedUnchanged('hn1', () => as(alice).put('/headnode/hn1/hnic/eth0'), 409);
      await refusedUnchanged('hn1', () => as(alice).del('/headnode/hn1/hnic/nope'), 404);
    });

    it('stops it by force: the process is gone, vncport null, still frozen; stopping again is a 409', async () => {
      await must(as(alice).post('/headnode/hn1/stop'));
      await waitGone(firstPid);
      expect(await show('hn1')).to.include({ status: 'stopped', vncport: null });
      expect(await ports()).to.deep.equal([]);
      await refusedUnchanged('hn1', () => as(alice).put('/headnode/hn1/hnic/eth9'), 409);
      await refusedUnchanged('hn1', () => as(alice).post('/headnode/hn1/hnic/eth2/connect_network', { network: 'pa-net' }), 409);
      await refusedUnchanged('hn1', () => as(alice).post('/headnode/hn1/hnic/eth0/detach_network'), 409);
      await refusedUnchanged('hn1', () => as(alice).post('/headnode/hn1/stop'), 409);
    });

    it('starts again after a stop, with the same hnics and VLANs', async () => {
      await must(as(alice).post('/headnode/hn1/start'));
      const h = await show('hn1');
      expect(h.status).to.equal('running');
      expect(await vncBanner(h.vncport)).to.match(/^RFB/);
      expect(await tag(driver().tapName('hn1', 'eth0'))).to.equal(String(vlanOf['pa-net']));
    });

    it('reports a VM that died (killed behind the service\'s back) instead of losing it', async () => {
      const p = await pid('hn1');
      process.kill(p, 'SIGKILL');
      await waitGone(p);
      const h = await waitFor('status of hn1', () => show('hn1'), (x) => x.status === 'died');
      expect(h.vncport).to.equal(null);
      expect(h.error).to.match(/without a stop call/);
      expect(await ports()).to.deep.equal([]);
      // It can be started again.
      await must(as(alice).post('/headnode/hn1/start'));
      expect((await show('hn1')).status).to.equal('running');
    });
  });

  describe('restarts of the service', () => {
    it('adopts a VM that kept running while the service restarted; same process, same VNC port', async () => {
      const before = await show('hn1');
      const p = await pid('hn1');
      await stopTestServer(ts, false);
      expect(alive(p)).to.equal(true); // VMs outlive a restart of the service
      ts = await startTestServer(settings(), {}, dataDir);
      api = ts.api;
      await ts.headnodesRecovered;
      expect(await show('hn1')).to.include({ status: 'running', vncport: before.vncport, error: null });
      expect(await pid('hn1')).to.equal(p);
      expect(await vncBanner(before.vncport)).to.match(/^RFB/);
      expect(await tag(driver().tapName('hn1', 'eth0'))).to.equal(String(vlanOf['pa-net']));
    });

    it('boots a VM again that died while the service was down; its vncport is the new one', async () => {
      const p = await pid('hn1');
      await stopTestServer(ts, false);
      process.kill(p, 'SIGKILL');
      await waitGone(p);
      ts = await startTestServer(settings(), {}, dataDir);
      api = ts.api;
      await ts.headnodesRecovered;
      const h = { pid: await driver().processId('hn1'), show: await show('hn1') };
      expect(h.pid).to.be.a('number').and.not.equal(p);
      expect(h.show.status).to.equal('running');
      expect(await vncBanner(h.show.vncport)).to.match(/^RFB/);
      expect(await qmp(driver().qmpSocketPath('hn1'), 'query-status')).to.include({ running: true });
      expect(await tag(driver().tapName('hn1', 'eth1'))).to.equal(String(vlanOf['pub']));
    });
  });

  describe('calls on one headnode at once', () => {
    it('start, stop, start and delete in parallel run one after another and leave nothing behind', async () => {
      await must(as(alice).put('/headnode/hp', { project: 'pa', base_img: 'base-headnode' }));
      await must(as(alice).put('/headnode/hp/hnic/eth0'));
      await must(as(alice).post('/headnode/hp/hnic/eth0/connect_network', { network: 'pub' }));
      const calls = [() => as(alice).post('/headnode/hp/start'), () => as(alice).post('/headnode/hp/stop'),
        () => as(alice).post('/headnode/hp/start'), () => as(alice).del('/headnode/hp')];
      const rs = await Promise.all(calls.map((c) => c()));
      for (const r of rs) expect([200, 404, 409], JSON.stringify(r.body)).to.include(r.status);
      expect(rs[3].status).to.equal(200);
      expect((await api.get('/headnode/hp')).status).to.equal(404);
      expect(qemuProcesses(tmp).length).to.equal(1); // hn1's only
      expect(await ports()).to.have.members([driver().tapName('hn1', 'eth0'), driver().tapName('hn1', 'eth1')]);
    });
  });

  describe('deleting it', () => {
    it('removes the VM, its overlay and taps, and releases its networks and project', async () => {
      const p = await pid('hn1');
      const overlay = driver().overlayPath('hn1');
      expect(fs.existsSync(overlay)).to.equal(true);
      await must(as(alice).del('/headnode/hn1'));
      expect(alive(p)).to.equal(false);
      expect(fs.existsSync(overlay)).to.equal(false);
      expect(await ports()).to.deep.equal([]);
      expect((await api.get('/headnode/hn1')).status).to.equal(404);
      expect((await must(as(alice).get('/project/pa/headnodes'))).body).to.deep.equal([]);
      await must(as(alice).del('/network/pa-net'));
      await must(api.del('/network/adm-pa/access/pa'));
      expect(qemuProcesses(tmp)).to.deep.equal([]);
    });

    it('deletes a headnode that never started, and one that is stopped; the name can be reused', async () => {
      await must(as(bob).put('/headnode/hb', { project: 'pb', base_img: 'base-headnode' }));
      await must(as(bob).del('/headnode/hb'));
      await must(as(bob).put('/headnode/hb', { project: 'pb', base_img: 'dropped-in' }));
      await must(as(bob).put('/headnode/hb/hnic/eth0'));
      await must(as(bob).post('/headnode/hb/hnic/eth0/connect_network', { network: 'pb-net' }));
      await must(as(bob).post('/headnode/hb/start'));
      await must(as(bob).post('/headnode/hb/stop'));
      expect((await api.del('/project/pb')).status).to.equal(409); // still has a headnode (and a network)
      await must(api.del('/headnode/hb'));
      await must(as(bob).del('/network/pb-net'));
      await must(api.del('/project/pb'));
      expect(qemuProcesses(tmp)).to.deep.equal([]);
    });
  });

  describe('a start that runs out of time', () => {
    it('answers 502 at HILT_HEADNODE_TIMEOUT_MS, records the start as failed, and leaves no QEMU, helper, tap or state file', async () => {
      const dir = path.join(tmp, 'slow');
      fs.mkdirSync(dir);
      // An `ip` that hangs where the driver brings the taps up, when QEMU already runs (paused).
      // It records its pid; exec keeps that pid for the sleep.
      const reached = path.join(dir, 'ip-reached');
      const ip = path.join(dir, 'hanging-ip');
      fs.writeFileSync(ip, `#!/bin/sh\necho $$ > ${reached}\nexec sleep 60\n`, { mode: 0o755 });
      const stateDir = path.join(dir, 'state');
      const hanging = new QemuHeadnodeDriver({
        imagesDir: path.join(tmp, 'images'), stateDir, bridge: ovs.bridge, ovsDbSock: ovs.dbSock, memoryMb: 64, ipPath: ip,
      });
      const slow = await startTestServer({ ...settings(), headnodeTimeoutMs: 3000 }, { headnodeDriver: hanging }, path.join(dir, 'data'));
      const sapi = slow.api;
      await must(sapi.put('/project/ps'));
      await must(sapi.put('/network/ps-net', { owner: 'ps', access: 'ps', net_id: '' }));
      await must(sapi.put('/headnode/hs', { project: 'ps', base_img: 'base-headnode' }));
      await must(sapi.put('/headnode/hs/hnic/eth0'));
      await must(sapi.post('/headnode/hs/hnic/eth0/connect_network', { network: 'ps-net' }));

      const t0 = Date.now();
      const r = await sapi.post('/headnode/hs/start');
      const ms = Date.now() - t0;
      expect(r.status).to.equal(502);
      expect(r.body).to.deep.equal({ type: 'HeadnodeError', msg: 'headnode hs: starting the VM did not finish within 3000 ms' });
      expect(ms).to.be.within(2900, 4500);
      expect(fs.existsSync(reached), 'the deadline struck while the helper hung').to.equal(true);
      await waitGone(Number(fs.readFileSync(reached, 'utf8')), 2000);

      const h = await waitFor('hs recorded', async () => (await must(sapi.get('/headnode/hs'))).body, (b) => b.status !== 'starting', 5000);
      expect(h).to.include({ status: 'created', vncport: null, error: 'headnode hs: starting the VM did not finish within 3000 ms' });
      expect(qemuProcesses(dir)).to.deep.equal([]);
      expect(fs.readdirSync(stateDir).filter((f) => f.endsWith('.json'))).to.deep.equal([]);
      expect(await ports()).not.to.include(hanging.tapName('hs', 'eth0'));
      await stopTestServer(slow, false);
    });
  });
});
