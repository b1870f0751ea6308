/**
 * Timed reservations (issue 20 item 4): the lease's calls and their checks; at expiry the service,
 * as `hilt`, detaches every network (the simulator's port ends shut and without VLANs), releases the node
 * and powers it off; a lease that passes while hilt is stopped is acted on at the next start; a
 * lease that passes with an operation pending waits for it. The runner on a world of actors: one
 * detach at a time on each nic, without a backoff or a flag while it makes progress; a detach the
 * switch refuses flags the node; a refusal of the expiry itself is not tried again at once.
 */
import { expect } from 'chai';
import { startTestServer, stopTestServer, TestServer, Client, must, makeUser, makeNode, finished, mockSwitch, Creds } from '../../helpers/server';
import { registration, simFor, VENDOR_CASES } from '../../helpers/switch-sims';
import type { SwitchSim } from '../../sim/switch/sim';
import { until, sleep } from '../../helpers/wait';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { logFileName } from '../../../hardware/console-log';
import { testWorld, wiredNode, settled, TestWorld } from '../../helpers/world';
import { LeaseExpiry } from '../../../src/lifecycle/leases';
import { NO_LIFECYCLE_TELEMETRY } from '../../../src/lifecycle/common';
import { HiltError } from '../../../actors/errors';
import { leasePassed, type NodeCommand, type NodeReplies } from '../../../actors/node/protocol';
import type { Asker } from '../../../actors/runtime';

const DAY = 86_400_000;
const inMs = (ms: number) => new Date(Date.now() + ms).toISOString();

/** `YYYY-MM-31T12:00:00Z` of a month without a 31st whose roll-over (the 1st of the next) is within 80 days, if any. */
function shortMonthSoon(): string | undefined {
  for (let i = 0; i < 3; i++) {
    const d = new Date();
    d.setUTCDate(1);
    d.setUTCMonth(d.getUTCMonth() + i);
    const text = `${d.toISOString().slice(0, 8)}31T12:00:00Z`;
    const rolled = Date.parse(text);
    if (new Date(rolled).getUTCDate() !== 31 && rolled > Date.now() + DAY && rolled < Date.now() + 80 * DAY) return text;
  }
  return undefined;
}

describe('leases', function () {
  this.timeout(60_000);

  describe('the calls', () => {
    let ts: TestServer;
    let api: Client;
    let member: Creds;
    let outsider: Creds;
    before(async () => {
      ts = await startTestServer();
      api = ts.api;
      await must(api.put('/project/pa'));
      await must(api.put('/project/pb'));
      member = await makeUser(api, 'lease-m', 'lease-m-pw', ['pa']);
      outsider = await makeUser(api, 'lease-o', 'lease-o-pw', ['pb']);
      await makeNode(api, 'l1');
      await makeNode(api, 'l2');
      await must(api.post('/project/pa/connect_node', { node: 'l1' }));
    });
    after(() => stopTestServer(ts));

    it('checks the time first (400, even without credentials), then the node (404), then that it is in a project (409), then the caller (401)', async () => {
      const bad = async (expires_at: unknown, re: RegExp, as?: Creds | null) => {
        const r = await api.put('/node/l1/lease', { expires_at }, as === undefined ? undefined : { as });
        expect(r.status, r.text).to.equal(400);
        expect(r.body).to.deep.include({ type: 'BadArgumentError' });
        expect(r.body.msg).to.match(re);
      };
      await bad('2000-01-01T00:00:00Z', /in the past/);
      // Years 0–99 are years of their own (the year 0 has a 29 February; 1900, which Date.UTC reads, has none).
      await bad('0000-02-29T00:00:00Z', /in the past/);
      await bad('0099-12-31T23:59:59Z', /in the past/);
      await bad(inMs(91 * DAY), /more than 90 days/);
      await bad('tomorrow', /RFC 3339/);
      await bad('2030-01-01', /RFC 3339/);
      // Fields out of range, which Date.parse would roll over into another time, are no time at all.
      const tomorrow = inMs(DAY).slice(0, 10);
      await bad(`${tomorrow}T24:00:00Z`, /RFC 3339/);
      await bad(`${tomorrow}T12:00:00+24:00`, /RFC 3339/);
      const short = shortMonthSoon();
      if (short) await bad(short, /RFC 3339/);
      await bad(7, /string/);
      await bad(inMs(-DAY), /in the past/, null);
      expect((await api.put('/node/l1/lease', {})).status).to.equal(400);
      expect((await api.put('/node/l1/lease', { expires_at: inMs(DAY), x: 1 })).status).to.equal(400);
      expect((await api.put('/node/nope/lease', { expires_at: inMs(DAY) })).status).to.equal(404);
      const free = await api.put('/node/l2/lease', { expires_at: inMs(DAY) });
      expect(free.status).to.equal(409);
      expect(free.body.msg).to.match(/free/);
      expect((await api.put('/node/l1/lease', { expires_at: inMs(DAY) }, { as: outsider })).status).to.equal(401);
      expect((await api.put('/node/l1/lease', { expires_at: inMs(DAY) }, { as: null })).status).to.equal(401);
      expect((await api.get('/node/l1/lease')).status).to.equal(404);
    });

    it('a member sets, moves, reads, lists and removes the lease of its node', async () => {
      const t1 = new Date(Date.now() + 3 * DAY);
      await must(api.put('/node/l1/lease', { expires_at: t1.toISOString().replace('Z', '+00:00') }, { as: member }));
      expect((await must(api.get('/node/l1/lease', { as: member }))).body).to.deep.equal({ project: 'pa', expires_at: t1.toISOString(), expired: false });
      const t2 = new Date(Date.now() + 5 * DAY);
      await must(api.put('/node/l1/lease', { expires_at: t2.toISOString() }));
      expect((await must(api.get('/project/pa/leases', { as: member }))).body).to.deep.equal([{ node: 'l1', expires_at: t2.toISOString(), expired: false }]);
      expect((await api.get('/node/l1/lease', { as: outsider })).status).to.equal(401);
      expect((await api.get('/project/pa/leases', { as: outsider })).status).to.equal(401);
      expect((await api.get('/project/nope/leases')).status).to.equal(404);
      expect((await api.del('/node/l1/lease', { as: outsider })).status).to.equal(401);
      await must(api.del('/node/l1/lease', { as: member }));
      expect((await api.get('/node/l1/lease')).status).to.equal(404);
      expect((await api.del('/node/l1/lease')).status).to.equal(404);
      // A free node's lease: anyone may read that there is none (as show_node), only an admin may ask to remove it.
      expect((await api.get('/node/l2/lease', { as: outsider })).status).to.equal(404);
      expect((await api.del('/node/l2/lease', { as: outsider })).status).to.equal(401);
      expect((await api.del('/node/l2/lease')).status).to.equal(404);
      expect((await must(api.get('/project/pa/leases'))).body).to.deep.equal([]);
      const journal = (await must(api.get('/admin/audit?kind=node&name=l1'))).body.entries.map((e: { call: string; by: string }) => `${e.call} ${e.by}`);
      expect(journal.slice(0, 3)).to.deep.equal(['node_delete_lease lease-m', 'node_set_lease admin', 'node_set_lease lease-m']);
    });

    it('a release ends the lease', async () => {
      await must(api.put('/node/l1/lease', { expires_at: inMs(DAY) }));
      await must(api.post('/project/pa/detach_node', { node: 'l1' }));
      expect((await api.get('/node/l1/lease')).status).to.equal(404);
      await must(api.post('/project/pa/connect_node', { node: 'l1' }));
      expect((await api.get('/node/l1/lease')).status).to.equal(404);
    });
  });

  describe('expiry, with a switch simulator over SSH', () => {
    const c = VENDOR_CASES.find((v) => v.vendor === 'nexus')!;
    let sim: SwitchSim;
    let ts: TestServer;
    let api: Client;
    let vlans: Record<string, number>;

    before(async () => {
      sim = await simFor(c);
      ts = await startTestServer();
      api = ts.api;
      await must(api.put('/project/px'));
      await must(api.put('/switch/nx', registration(c, sim)));
      await makeNode(api, 'x1', ['eth0', 'eth1']);
      for (const [i, nic] of ['eth0', 'eth1'].entries()) {
        await must(api.put(`/switch/nx/port/${c.ports[i]}`));
        await must(api.post(`/switch/nx/port/${c.ports[i]}/connect_nic`, { node: 'x1', nic }));
      }
      await must(api.post('/project/px/connect_node', { node: 'x1' }));
      for (const w of ['wa', 'wb']) await must(api.put(`/network/${w}`, { owner: 'px', access: 'px', net_id: '' }));
      const nets = (await must(api.get('/networks'))).body;
      vlans = { wa: Number(nets.wa.network_id), wb: Number(nets.wb.network_id) };
      const op = async (nic: string, body: object) => expect((await finished(api, (await must(api.post(`/node/x1/nic/${nic}/connect_network`, body), 202)).body.status_id)).status).to.equal('DONE');
      await op('eth0', { network: 'wa' });
      await op('eth0', { network: 'wb', channel: `vlan/${vlans.wb}` });
      await op('eth1', { network: 'wb' });
      await must(api.post('/node/x1/power_on'));
    });
    after(() => stopTestServer(ts));

    it('detaches every network as `hilt`, releases the node and powers it off', async () => {
      expect(sim.carried(c.ports[0])).to.deep.equal({ native: vlans.wa, tagged: [vlans.wb] });
      expect(sim.isUp(c.ports[0]) && sim.isUp(c.ports[1]), 'ports carrying networks are up').to.equal(true);
      const before = (await must(api.get('/metrics'))).text.match(/^hilt_lease_expiries_total (\d+)/m)?.[1] ?? '0';
      await must(api.put('/node/x1/lease', { expires_at: inMs(1500) }));
      await until('the node is free', async () => (await must(api.get('/nodes/free'))).body.includes('x1'), 20_000);
      expect(sim.carried(c.ports[0])).to.deep.equal({ native: null, tagged: [] });
      expect(sim.carried(c.ports[1])).to.deep.equal({ native: null, tagged: [] });
      // Their last network gone, the ports are shut (HILT_INACTIVE_PORTS, the default).
      expect([sim.isUp(c.ports[0]), sim.isUp(c.ports[1])]).to.deep.equal([false, false]);
      const node = (await must(api.get('/node/x1'))).body;
      for (const nic of node.nics) expect(nic.networks).to.deep.equal({});
      await until('the node is off', () => ts.mockObm.state('bmc.example').power === 'off');
      // The power-off's outcome is recorded after the BMC answered.
      await until('the outcome is recorded', () => !ts.world.rm.releasePowerOffs.has('x1'));
      expect((await api.get('/node/x1/lease')).status).to.equal(404);
      const after = (await must(api.get('/metrics'))).text.match(/^hilt_lease_expiries_total (\d+)/m)?.[1];
      expect(Number(after)).to.equal(Number(before) + 1);
      // Each step in the audit log under `hilt`.
      const byHilt = (await must(api.get('/admin/audit?user=hilt&limit=50'))).body.entries.map((e: { kind: string; event: { type: string } }) => `${e.kind} ${e.event.type}`);
      expect(byHilt).to.include.members(['node NodeLeaseExpired', 'nic NetworkActionQueued', 'node NodeReleased', 'node ReleasePowerOffSucceeded']);
      expect(byHilt.filter((e: string) => e === 'nic NetworkActionQueued')).to.have.length(3);
    });
  });

  describe('durable expiry', () => {
    it('a lease that passes while hilt is stopped is acted on at the next start', async () => {
      let ts = await startTestServer();
      await must(ts.api.put('/project/pq'));
      await makeNode(ts.api, 'q1');
      await must(ts.api.post('/project/pq/connect_node', { node: 'q1' }));
      await must(ts.api.put('/node/q1/lease', { expires_at: inMs(1200) }));
      await stopTestServer(ts, false);
      await sleep(1500);
      ts = await startTestServer({}, {}, ts.dataDir);
      await until('the node is free', async () => (await must(ts.api.get('/nodes/free'))).body.includes('q1'));
      const released = (await must(ts.api.get('/admin/audit?kind=node&name=q1&limit=5'))).body.entries.map((e: { by: string; event: { type: string } }) => `${e.event.type} ${e.by}`);
      expect(released).to.include.members(['NodeLeaseExpired hilt', 'NodeReleased hilt']);
      await stopTestServer(ts);
    });

    it('an expiry ends the console\'s recording and deletes its log, as a release does: the next tenant reads 404', async () => {
      const ts = await startTestServer();
      try {
        const api = ts.api;
        await must(api.put('/project/pc'));
        await must(api.put('/project/pd'));
        await makeNode(api, 'k1');
        await must(api.post('/project/pc/connect_node', { node: 'k1' }));
        await must(api.call('PUT', '/node/k1/console'));
        // The mock OBM's console greets; its log is a file in the data folder.
        await until('the console is logged', async () => (await api.get('/node/k1/console')).text.includes('mock serial console'));
        const file = join(ts.dataDir, 'consoles', logFileName('k1'));
        expect(existsSync(file)).to.equal(true);
        await must(api.put('/node/k1/lease', { expires_at: inMs(1000) }));
        await until('the node is free', async () => (await must(api.get('/nodes/free'))).body.includes('k1'));
        await until('the log is gone', () => !existsSync(file) && !ts.consoles.processes().has('k1') && ts.consoles.active() === 0);
        await must(api.post('/project/pd/connect_node', { node: 'k1' }));
        expect((await api.get('/node/k1/console')).status).to.equal(404);
      } finally {
        await stopTestServer(ts);
      }
    });

    it('a lease that passes with an operation pending waits for it; meanwhile nothing more is connected', async () => {
      const ts = await startTestServer({ mockSwitchDelayMs: 2500 });
      const api = ts.api;
      await must(api.put('/project/pp'));
      await must(api.put('/switch/ms', mockSwitch));
      await makeNode(api, 'p1', ['eth0', 'eth1']);
      for (const [i, nic] of ['eth0', 'eth1'].entries()) {
        await must(api.put(`/switch/ms/port/gi1/0/${i}`));
        await must(api.post(`/switch/ms/port/gi1/0/${i}/connect_nic`, { node: 'p1', nic }));
      }
      await must(api.post('/project/pp/connect_node', { node: 'p1' }));
      await must(api.put('/network/pw', { owner: 'pp', access: 'pp', net_id: '' }));
      await must(api.put('/node/p1/lease', { expires_at: inMs(1000) }));
      const pending = (await must(api.post('/node/p1/nic/eth0/connect_network', { network: 'pw' }), 202)).body.status_id;
      await until('the lease has passed', async () => (await must(api.get('/node/p1/lease'))).body.expired === true);
      // Still the project's while its operation runs; no new network goes on.
      expect((await must(api.get('/node/p1'))).body.project).to.equal('pp');
      const refused = await api.post('/node/p1/nic/eth1/connect_network', { network: 'pw' });
      expect(refused.status).to.equal(409);
      expect(refused.body.msg).to.match(/lease of node p1 has expired/);
      expect((await api.put('/node/p1/lease', { expires_at: inMs(DAY) })).status).to.equal(409);
      // The pending connect ends as it would have; then the expiry detaches it and releases.
      expect((await finished(api, pending)).status).to.equal('DONE');
      await until('the node is free', async () => (await must(api.get('/nodes/free'))).body.includes('p1'), 20_000);
      const ops = (await must(api.get('/node/p1/networking_actions'))).body.map((a: { new_network: string | null; status: string }) => `${a.new_network} ${a.status}`);
      expect(ops).to.deep.equal(['null DONE', 'pw DONE']);
      expect(ts.mockSwitch.port('ms', 'gi1/0/0')).to.deep.include({ native: null, tagged: [] });
      await stopTestServer(ts);
    });
  });

  describe('expiry racing the project\'s own release and new reservation', () => {
    it('an expiry never releases a node its project released and reserved again meanwhile', async () => {
      const t = testWorld();
      const by = 'admin';
      const e = new LeaseExpiry({ rm: t.world.rm, nodes: t.world.nodes, projects: t.world.projects, telemetry: NO_LIFECYCLE_TELEMETRY, log: { info() {}, warn() {} } });
      try {
        await wiredNode(t.world);
        // The moment the lease passes, a member releases the node and another reserves it again:
        // both calls reach the project's mailbox before the expiry's release does.
        const raced: Promise<unknown>[] = [];
        t.world.nodeWatchers.push((_id, prev, next) => {
          if (next?.lease?.expired && !prev?.lease?.expired) {
            raced.push(t.world.projects.ask('p', { type: 'project.detachNode', by, node: 'n1' }));
            raced.push(t.world.projects.ask('p', { type: 'project.connectNode', by, node: 'n1' }));
          }
        });
        t.world.nodeWatchers.push(e.watchNode);
        t.world.nicWatchers.push(e.watchNic);
        e.start();
        await t.world.nodes.ask('n1', { type: 'node.setLease', by, project: null, expiresAt: Date.now() });
        await until('the member\'s calls were made', () => raced.length === 2, 2000);
        await Promise.all(raced);
        await until('the expiry has ended', () => !e.expiring.has('n1'), 5000);
        const node = t.world.rm.nodes.get('n1')!;
        expect(node.project, 'the new reservation holds').to.equal('p');
        expect(node.lease, 'the new reservation has no lease').to.equal(undefined);
        const releases: string[] = [];
        for await (const j of t.world.nodes.journal('n1', 1000)) {
          const ev = j.data as { type: string; by: string };
          if (ev.type === 'NodeReleased') releases.push(ev.by);
        }
        expect(releases, 'releases of the node').to.deep.equal([by]);
      } finally {
        e.close();
        await t.close();
      }
    });
  });

  describe('a lease whose time has passed, before its expiry is recorded', () => {
    it('is neither moved nor removed, and takes no network: the node decides by the time, not by when the expiry\'s timer fires', async () => {
      const t = testWorld();
      const by = 'admin';
      try {
        await wiredNode(t.world);
        // No runner: the expiry is never recorded, as when its timer fires late (a busy process,
        // a forward step of the wall clock).
        await t.world.nodes.ask('n1', { type: 'node.setLease', by, project: null, expiresAt: Date.now() + 20 });
        await sleep(40);
        const refused = async (cmd: NodeCommand) => {
          const err = await t.world.nodes.ask('n1', cmd as never).then(() => null, (e: unknown) => e);
          expect(err, cmd.type).to.be.instanceOf(HiltError);
          expect((err as HiltError).type, cmd.type).to.equal('IllegalStateError');
          expect((err as HiltError).message).to.match(/lease of node n1 has expired/);
        };
        await refused({ type: 'node.setLease', by, project: 'p', expiresAt: Date.now() + DAY });
        await refused({ type: 'node.deleteLease', by, project: 'p' });
        await refused({ type: 'node.connectNetwork', by, project: 'p', nic: 'eth0', network: 'w1', channel: 'vlan/native' });
        const lease = t.world.rm.nodes.get('n1')!.lease!;
        expect(lease.expired, 'nothing recorded').to.equal(undefined);
        // What GET /node/<n>/lease and a project's leases show as `expired`: the node's own test.
        expect(leasePassed(lease), 'passed by its time').to.equal(true);
        expect(leasePassed({ ...lease, expiresAt: Date.now() + DAY }), 'a lease still running').to.equal(false);
        expect(leasePassed({ ...lease, expiresAt: Date.now() + DAY, expired: true }), 'one seen to pass').to.equal(true);
        expect(t.world.rm.pendingByNode.has('n1')).to.equal(false);
      } finally {
        await t.close();
      }
    });

    it('a forward step of the wall clock past the lease\'s end is acted on within seconds, not when the timer set before it fires', async () => {
      const t = testWorld();
      const by = 'admin';
      const e = new LeaseExpiry({ rm: t.world.rm, nodes: t.world.nodes, projects: t.world.projects, telemetry: NO_LIFECYCLE_TELEMETRY, log: { info() {}, warn() {} } });
      const realNow = Date.now;
      try {
        await wiredNode(t.world);
        t.world.nodeWatchers.push(e.watchNode);
        t.world.nicWatchers.push(e.watchNic);
        e.start();
        await t.world.nodes.ask('n1', { type: 'node.setLease', by, project: null, expiresAt: Date.now() + 30 * 60_000 });
        // NTP steps the clock 31 minutes on: the runner's timer runs on the monotonic clock.
        Date.now = () => realNow() + 31 * 60_000;
        await until('the node is free', () => t.world.rm.nodes.get('n1')?.project === null, 15_000);
      } finally {
        Date.now = realNow;
        e.close();
        await t.close();
      }
    });
  });

  describe('expiry, the runner on a world of actors', () => {
    const by = 'admin';
    let t: TestWorld;
    let expiry: LeaseExpiry | undefined;
    /** every warning of the runner */
    let warned: string[];
    /** the detaches the runner asked for, `nic network`, and their refusals */
    let detaches: string[];
    let refused: string[];

    beforeEach(async () => {
      t = testWorld();
      warned = [];
      detaches = [];
      refused = [];
      await wiredNode(t.world);
      // eth0 carries w1 (native) and w2 (tagged); eth1 carries w2 (native).
      for (const [nic, network, channel] of [['eth0', 'w1', 'vlan/native'], ['eth0', 'w2', 'vlan/101'], ['eth1', 'w2', 'vlan/native']]) {
        await t.world.nodes.ask('n1', { type: 'node.connectNetwork', by, project: 'p', nic, network, channel });
        await settled(t.world);
      }
      expect(t.driver.port('s1', 'gi1/0/1')).to.deep.equal({ native: 100, tagged: [101] });
    });
    afterEach(async () => {
      expiry?.close();
      expiry = undefined;
      await t.close();
    });

    /** Starts the runner on the world, its node asks through `nodes`, and lets n1's lease pass. */
    async function expire(nodes: Asker<NodeCommand, NodeReplies> = t.world.nodes): Promise<LeaseExpiry> {
      const recording = {
        ask: ((id: string, cmd: NodeCommand) => {
          if (cmd.type === 'node.detachNetwork') detaches.push(`${cmd.nic} ${cmd.network}`);
          return nodes.ask(id, cmd as never).catch((err: Error) => {
            if (cmd.type === 'node.detachNetwork') refused.push(`${cmd.nic} ${cmd.network}: ${err.message}`);
            throw err;
          });
        }) as Asker<NodeCommand, NodeReplies>['ask'],
      } as Asker<NodeCommand, NodeReplies>;
      const e = new LeaseExpiry({
        rm: t.world.rm, nodes: recording, projects: t.world.projects, telemetry: NO_LIFECYCLE_TELEMETRY,
        log: { info() {}, warn: (_o, msg) => void warned.push(msg) },
      });
      expiry = e;
      t.world.nodeWatchers.push(e.watchNode);
      t.world.nicWatchers.push(e.watchNic);
      e.start();
      await t.world.nodes.ask('n1', { type: 'node.setLease', by, project: null, expiresAt: Date.now() });
      return e;
    }

    it('detaches one network at a time on each nic, tagged before native, with no backoff and no flag', async () => {
      const t0 = Date.now();
      await expire();
      await until('the node is free', () => t.world.rm.nodes.get('n1')?.project === null, 5000);
      const took = Date.now() - t0;
      // Fired at once beside a pending one on the same nic, a detach is refused (409 pending),
      // flagged and tried again only after the failure's backoff (1 s, 2 s, …).
      expect(refused, 'detaches refused').to.deep.equal([]);
      expect(warned, 'warnings (a flag in GET /admin/nodes/attention)').to.deep.equal([]);
      expect(detaches.filter((d) => d.startsWith('eth0'))).to.deep.equal(['eth0 w2', 'eth0 w1']);
      expect(detaches).to.have.length(3);
      expect(took, 'a healthy expiry backed off').to.be.below(1000);
      expect(t.driver.port('s1', 'gi1/0/1')).to.deep.equal({ native: null, tagged: [] });
      expect(t.driver.port('s1', 'gi1/0/2')).to.deep.equal({ native: null, tagged: [] });
    });

    it('a detach the switch refuses flags the node with the switch\'s error and is tried again until it succeeds', async () => {
      t.driver.failing.add('gi1/0/1');
      const e = await expire();
      await until('the node is flagged', () => e.expiring.get('n1')?.problem !== undefined, 5000);
      expect(e.expiring.get('n1')!.problem).to.match(/^could not detach network w2 from nic eth0: port gi1\/0\/1 refused/);
      expect(t.world.rm.nodes.get('n1')?.project).to.equal('p');
      t.driver.failing.delete('gi1/0/1');
      await until('the node is free', () => t.world.rm.nodes.get('n1')?.project === null, 5000);
      expect(refused, 'detaches refused').to.deep.equal([]);
      expect(t.driver.port('s1', 'gi1/0/1')).to.deep.equal({ native: null, tagged: [] });
      expect(e.expiring.has('n1')).to.equal(false);
    });

    it('a refusal of the expiry\'s first step flags the node and is not tried again at once', async () => {
      let asked = 0;
      const refusing = {
        ask: (async (id: string, cmd: NodeCommand) => {
          if (cmd.type !== 'node.leaseExpired') return t.world.nodes.ask(id, cmd as never);
          asked++;
          throw new HiltError('ServerError', 'a bug in the node actor');
        }) as Asker<NodeCommand, NodeReplies>['ask'],
      } as Asker<NodeCommand, NodeReplies>;
      const e = await expire(refusing);
      await until('the node is flagged', () => e.expiring.get('n1')?.problem !== undefined, 2000);
      expect(e.expiring.get('n1')!.problem).to.equal('the expiry failed: a bug in the node actor');
      // Nothing to wait for: in this while, a try again at once would have asked many times.
      await sleep(300);
      expect(asked).to.equal(1);
    });
  });
});
