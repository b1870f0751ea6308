/**
 * Inactive ports are shut (HILT_INACTIVE_PORTS), end to end per SSH vendor (the real service
 * over HTTP, each switch a simulator over real SSH), per REST vendor (a simulator of its REST
 * API) and the mock: a port is down after
 * registration and a port_revert, up after its first network (read back from the switch by the
 * drift audit, over SSH), down after its last one leaves, after a force-detach and after the
 * release of its node; with `keep` it stays up as before. The upgrade: ports of a data folder
 * written without the policy are not shut at start; the drift audit shows the free ones still
 * up, and a repair shuts them.
 */
import { expect } from 'chai';
import { must, makeNode, finished, startTestServer, stopTestServer, TestServer, Client, mockSwitch } from '../../helpers/server';
import { registration, simFor, SSH_CASES } from '../../helpers/switch-sims';
import { until } from '../../helpers/wait';
import type { SwitchSim } from '../../sim/switch/sim';
import { REST_CASES, restRegistration, restSimFor } from '../../helpers/rest-switch-sims';

/** A switch under test: how to register it, its ports, and whether a port is up on the hardware. */
interface Hw { name: string; body: Record<string, unknown>; ports: string[]; up(port: string): boolean }

async function hardware(ts: TestServer, kind: string, sw: string): Promise<Hw & { sim?: SwitchSim }> {
  if (kind === 'mock') return { name: 'mock', body: mockSwitch, ports: ['gi1/0/1', 'gi1/0/2', 'gi1/0/3'], up: (p) => ts.mockSwitch.enabled(sw, p) };
  const rest = REST_CASES.find((v) => v.vendor === kind);
  if (rest) {
    const sim = await restSimFor(rest);
    // Ports left up, as a site's switch is after HIL (an OS9 port ships shut).
    for (const p of sim.ports.values()) p.shutdown = false;
    return { name: kind, body: restRegistration(rest, sim), ports: rest.ports.slice(0, 3), up: (p) => !sim.port(p).shutdown };
  }
  const c = SSH_CASES.find((v) => v.vendor === kind)!;
  const sim = await simFor(c);
  return { name: kind, sim, body: registration(c, sim), ports: c.ports.slice(0, 3), up: (p) => sim.isUp(p) };
}

const KINDS = ['mock', ...SSH_CASES.map((c) => c.vendor), ...REST_CASES.map((c) => c.vendor)];
/** Kinds whose switches take a tagged network only beside a native one, which leaves last (HIL's rule). */
const NATIVE_FIRST = new Set<string>(REST_CASES.map((c) => c.vendor));

describe('inactive switch ports are shut (HILT_INACTIVE_PORTS)', function () {
  this.timeout(60_000);

  describe('shutdown (the default)', () => {
    let ts: TestServer;
    let api: Client;
    const vlan: Record<string, number> = {};

    before(async () => {
      ts = await startTestServer({ switchTimeoutMs: 20_000 });
      api = ts.api;
      await must(api.put('/project/ip'));
      for (const w of ['in-a', 'in-b']) await must(api.put(`/network/${w}`, { owner: 'ip', access: 'ip', net_id: '' }));
      const list = (await must(api.get('/networks'))).body;
      for (const w of ['in-a', 'in-b']) vlan[w] = Number(list[w].network_id);
    });
    after(() => stopTestServer(ts));

    const op = async (path: string, body?: Record<string, unknown>) => {
      const r = await api.post(path, body);
      expect(r.status, r.text).to.equal(202);
      const s = await finished(api, r.body.status_id);
      expect(s.status, JSON.stringify(s)).to.equal('DONE');
    };

    for (const kind of KINDS) {
      describe(kind, () => {
        let hw: Hw;
        const sw = `in-${kind}`;
        const node = `in-${kind}-n`;
        let port: string;
        const audited = async () => (await must(api.get(`/admin/switch/${sw}/drift`))).body.ports.find((p: { port: string }) => p.port === port);

        before(async () => {
          hw = await hardware(ts, kind, sw);
          port = hw.ports[0]!;
          await must(api.put(`/switch/${sw}`, hw.body));
          await must(api.put(`/switch/${sw}/port/${port}`));
          await makeNode(api, node, ['eth0']);
          await must(api.post(`/switch/${sw}/port/${port}/connect_nic`, { node, nic: 'eth0' }));
          await must(api.post('/project/ip/connect_node', { node }));
        });

        it('registration changes nothing on the switch; a port_revert shuts the port', async () => {
          expect(hw.up(port), 'registered, never touched').to.equal(true);
          await op(`/switch/${sw}/port/${port}/revert`);
          expect(hw.up(port)).to.equal(false);
          expect(await audited()).to.deep.include({ status: 'in_sync', actual: { native: null, tagged: [], enabled: false } });
        });

        it('brings the port up with its first network, keeps it up while it carries any, shuts it when the last one leaves', async () => {
          await op(`/node/${node}/nic/eth0/connect_network`, { network: 'in-a' });
          expect(hw.up(port)).to.equal(true);
          // Read back from the switch (over SSH for the SSH vendors).
          expect(await audited()).to.deep.include({ status: 'in_sync', expected: { native: vlan['in-a'], tagged: [], enabled: true }, actual: { native: vlan['in-a'], tagged: [], enabled: true } });
          await op(`/node/${node}/nic/eth0/connect_network`, { network: 'in-b', channel: `vlan/${vlan['in-b']}` });
          const [first, last] = NATIVE_FIRST.has(kind) ? ['in-b', 'in-a'] : ['in-a', 'in-b'];
          await op(`/node/${node}/nic/eth0/detach_network`, { network: first });
          expect(hw.up(port), 'one network left').to.equal(true);
          await op(`/node/${node}/nic/eth0/detach_network`, { network: last });
          expect(hw.up(port)).to.equal(false);
          expect(await audited()).to.deep.include({ status: 'in_sync', actual: { native: null, tagged: [], enabled: false } });
        });

        it('shuts the port after a force-detach of its last network, by the set-back of the port in doubt (in the background)', async () => {
          await op(`/node/${node}/nic/eth0/connect_network`, { network: 'in-a' });
          expect(hw.up(port)).to.equal(true);
          await must(api.post(`/admin/node/${node}/nic/eth0/force_detach`, { network: 'in-a' }));
          // The port is in doubt of the VLAN the switch was not told about; its set-back, on a
          // switch that is alive after all, shuts the port and removes the VLAN.
          await until('the port is out of doubt', () => !ts.world.rm.port(sw, port)!.doubt);
          expect(hw.up(port)).to.equal(false);
          expect(await audited()).to.deep.include({ status: 'in_sync', actual: { native: null, tagged: [], enabled: false } });
        });

        it('leaves the port shut when the node is released', async () => {
          await must(api.post('/project/ip/detach_node', { node }));
          expect(hw.up(port)).to.equal(false);
          expect(await audited()).to.deep.include({ status: 'in_sync' });
        });
      });
    }
  });

  describe('keep: ports are left as they are', () => {
    let ts: TestServer;
    let api: Client;

    before(async () => {
      ts = await startTestServer({ switchTimeoutMs: 20_000, inactivePorts: 'keep' });
      api = ts.api;
      await must(api.put('/project/kp'));
      await must(api.put('/network/kp-a', { owner: 'kp', access: 'kp', net_id: '' }));
    });
    after(() => stopTestServer(ts));

    for (const kind of KINDS) {
      it(`${kind}: revert, attach and detach never shut the port, and the audit does not ask for it`, async () => {
        const sw = `kp-${kind}`;
        const node = `kp-${kind}-n`;
        const hw = await hardware(ts, kind, sw);
        const port = hw.ports[0]!;
        await must(api.put(`/switch/${sw}`, hw.body));
        await must(api.put(`/switch/${sw}/port/${port}`));
        await makeNode(api, node, ['eth0']);
        await must(api.post(`/switch/${sw}/port/${port}/connect_nic`, { node, nic: 'eth0' }));
        await must(api.post('/project/kp/connect_node', { node }));
        const run = async (path: string, body?: Record<string, unknown>) => {
          const r = await must(api.post(path, body), 202);
          expect((await finished(api, r.body.status_id)).status).to.equal('DONE');
        };
        await run(`/switch/${sw}/port/${port}/revert`);
        expect(hw.up(port)).to.equal(true);
        await run(`/node/${node}/nic/eth0/connect_network`, { network: 'kp-a' });
        await run(`/node/${node}/nic/eth0/detach_network`, { network: 'kp-a' });
        expect(hw.up(port)).to.equal(true);
        const a = (await must(api.get(`/admin/switch/${sw}/drift`))).body.ports[0];
        expect(a).to.deep.include({ status: 'in_sync', expected: { native: null, tagged: [] }, actual: { native: null, tagged: [], enabled: true } });
      });
    }
  });

  describe('upgrade from a release without the policy', () => {
    it('shuts nothing at start; the audit shows the free ports still up, and a repair shuts them, leaving active ports up', async () => {
      // Today's release: ports are never shut.
      let ts = await startTestServer({ inactivePorts: 'keep' });
      const dir = ts.dataDir;
      let api = ts.api;
      await must(api.put('/project/up'));
      await must(api.put('/network/up-a', { owner: 'up', access: 'up', net_id: '' }));
      await must(api.put('/switch/up-sw', mockSwitch));
      for (const p of ['gi1/0/1', 'gi1/0/2', 'gi1/0/3']) await must(api.put(`/switch/up-sw/port/${p}`));
      for (const [n, p] of [['up-n1', 'gi1/0/1'], ['up-n2', 'gi1/0/2']] as const) {
        await makeNode(api, n, ['eth0']);
        await must(api.post(`/switch/up-sw/port/${p}/connect_nic`, { node: n, nic: 'eth0' }));
        await must(api.post('/project/up/connect_node', { node: n }));
      }
      for (const path of ['/node/up-n1/nic/eth0/connect_network', '/node/up-n2/nic/eth0/connect_network', '/node/up-n2/nic/eth0/detach_network']) {
        const r = await must(api.post(path, { network: 'up-a' }), 202);
        expect((await finished(api, r.body.status_id)).status).to.equal('DONE');
      }
      const ports = ['gi1/0/1', 'gi1/0/2', 'gi1/0/3'];
      expect(ports.map((p) => ts.mockSwitch.enabled('up-sw', p))).to.deep.equal([true, true, true]);
      await stopTestServer(ts, false);

      // This release, on the same data folder.
      ts = await startTestServer({}, {}, dir);
      api = ts.api;
      expect(ports.map((p) => ts.mockSwitch.enabled('up-sw', p)), 'no mass shutdown at start').to.deep.equal([true, true, true]);
      const audit = (await must(api.get('/admin/switch/up-sw/drift'))).body;
      expect(audit.summary).to.deep.include({ in_sync: 1, drifted: 2 });
      for (const p of ['gi1/0/2', 'gi1/0/3']) {
        const line = audit.ports.find((x: { port: string }) => x.port === p);
        expect(line.differences).to.deep.equal(['the port is up while it carries none of the service\'s networks (HILT_INACTIVE_PORTS=shutdown: a repair shuts it)']);
      }
      const repair = (await must(api.post('/admin/switch/up-sw/repair'))).body;
      expect(repair.summary).to.deep.include({ in_sync: 1, repaired: 2 });
      expect(ports.map((p) => ts.mockSwitch.enabled('up-sw', p))).to.deep.equal([true, false, false]);
      expect(ts.mockSwitch.port('up-sw', 'gi1/0/1').native).to.be.a('number');
      await stopTestServer(ts);
    });
  });
});
