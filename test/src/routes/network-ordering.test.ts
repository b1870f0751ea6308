/**
 * Ordering and concurrency of network operations (docs/api-conventions.md §8, §4, §7) with a mock switch
 * delay: many nodes on several switches at once end with the service's state equal to the
 * switches' port state; one node's actions apply in acceptance order, even across switches;
 * network_delete / project_detach_node / revoke / grant racing in-flight connects never leave
 * an attachment to a deleted network, a free node with attachments, or an attachment without
 * access.
 */
import { expect } from 'chai';
import { startTestServer, TestServer, Client, Res, must, makeNode, mockSwitch, finished } from '../../helpers/server';

const DELAY = 40;
const SWITCHES = ['s0', 's1', 's2', 's3'];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Small deterministic PRNG (mulberry32), so a failure can be replayed. */
function rng(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

async function accepted(p: Promise<Res>): Promise<string> {
  const r = await p;
  expect(r.status, r.text).to.equal(202);
  expect(r.body.status_id).to.be.a('string').that.is.not.empty;
  return r.body.status_id as string;
}

describe('network operations: ordering and concurrency (mock switch delay 40 ms)', function () {
  this.timeout(40_000);
  let ts: TestServer;
  let api: Client;
  /** network → VLAN id (networks deleted later stay here) */
  const vl: Record<string, number> = {};
  /** node → nic → its port */
  const wiring: Record<string, Record<string, { sw: string; port: string }>> = {};

  async function wire(node: string, nic: string, sw: string, port: string) {
    await must(api.post(`/switch/${sw}/port/${port}/connect_nic`, { node, nic }));
    (wiring[node] ??= {})[nic] = { sw, port };
  }

  async function network(name: string, owner: string, access: string) {
    await must(api.put(`/network/${name}`, { owner, access, net_id: '' }));
    vl[name] = Number((await must(api.get('/networks'))).body[name].network_id);
  }

  /** show_node (admin) → nic → networks, and the project. */
  async function showNode(node: string): Promise<{ project: string | null; nics: Record<string, Record<string, string>> }> {
    const b = (await must(api.get(`/node/${node}`))).body;
    return { project: b.project, nics: Object.fromEntries(b.nics.map((n: any) => [n.label, n.networks])) };
  }

  /** What the mock switch must hold for a nic carrying `nets`. */
  function portFor(nets: Record<string, string>) {
    const tagged = Object.entries(nets).filter(([c]) => c !== 'vlan/native').map(([, w]) => vl[w]).sort((a, b) => a - b);
    return { native: nets['vlan/native'] ? vl[nets['vlan/native']] : null, tagged };
  }

  /** Every nic of `nodes`: show_node networks equal the mock switch's port; returns them. */
  async function expectServiceMatchesSwitches(nodes: string[]) {
    const all: Record<string, Awaited<ReturnType<typeof showNode>>> = {};
    for (const node of nodes) {
      const s = await showNode(node);
      all[node] = s;
      for (const [nic, nets] of Object.entries(s.nics)) {
        const w = wiring[node]?.[nic];
        if (!w) continue;
        // every tagged channel must be vlan/<id of its network>
        for (const [c, net] of Object.entries(nets)) if (c !== 'vlan/native') expect(c, `${node}.${nic}`).to.equal(`vlan/${vl[net]}`);
        expect(ts.mockSwitch.port(w.sw, w.port), `${node}.${nic} on ${w.sw}/${w.port}`).to.deep.equal(portFor(nets));
        expect((await must(api.get(`/switch/${w.sw}/port/${w.port}`))).body.networks, `show_port ${w.sw}/${w.port}`).to.deep.equal(nets);
      }
    }
    return all;
  }

  before(async () => {
    ts = await startTestServer({ mockSwitchDelayMs: DELAY, vlanPool: [[1000, 1999]] });
    api = ts.api;
    for (const p of ['pa', 'pb']) await must(api.put(`/project/${p}`));
    for (const s of SWITCHES) {
      await must(api.put(`/switch/${s}`, mockSwitch));
      for (let i = 1; i <= 24; i++) await must(api.put(`/switch/${s}/port/gi1/0/${i}`));
    }
  });

  describe('20 nodes on 4 switches attaching and detaching at once', () => {
    const NODES = Array.from({ length: 20 }, (_, i) => `c${String(i).padStart(2, '0')}`);
    const projectOf = (i: number) => (i % 2 ? 'pb' : 'pa');
    const netsOf: Record<string, string[]> = { pa: ['a1', 'a2', 'a3', 'p1', 'p2'], pb: ['b1', 'b2', 'b3', 'p1', 'p2'] };

    before(async () => {
      for (const [w, o, a] of [['a1', 'pa', 'pa'], ['a2', 'pa', 'pa'], ['a3', 'admin', 'pa'], ['b1', 'pb', 'pb'], ['b2', 'pb', 'pb'], ['b3', 'admin', 'pb'], ['p1', 'admin', ''], ['p2', 'admin', '']]) {
        await network(w, o, a);
      }
      for (let i = 0; i < NODES.length; i++) {
        const n = NODES[i];
        await makeNode(api, n, ['e0', 'e1']);
        // e0 on s(i%4) ports 1..5, e1 on s((i+1)%4) ports 7..11: 10 nics per switch
        await wire(n, 'e0', SWITCHES[i % 4], `gi1/0/${Math.floor(i / 4) + 1}`);
        await wire(n, 'e1', SWITCHES[(i + 1) % 4], `gi1/0/${Math.floor(i / 4) + 7}`);
        await must(api.post(`/project/${projectOf(i)}/connect_node`, { node: n }));
      }
    });

    it('ends with show_node, attachments, show_port and the mock switches all agreeing with the operations done', async () => {
      const STEPS = 6;
      const model: Record<string, Record<string, Record<string, string>>> = {};
      let actions = 0;
      const worker = async (i: number, nic: string) => {
        const node = NODES[i];
        const rand = rng(1000 + i * 2 + (nic === 'e1' ? 1 : 0));
        const m: Record<string, string> = {};
        (model[node] ??= {})[nic] = m;
        for (let step = 0; step < STEPS; step++) {
          const free = netsOf[projectOf(i)].filter((w) => !Object.values(m).includes(w));
          const attached = Object.keys(m);
          const doConnect = attached.length === 0 || (free.length > 0 && rand() < 0.65);
          let id: string;
          if (doConnect) {
            const w = free[Math.floor(rand() * free.length)];
            const channel = !m['vlan/native'] && rand() < 0.5 ? 'vlan/native' : `vlan/${vl[w]}`;
            id = await accepted(api.post(`/node/${node}/nic/${nic}/connect_network`, channel === 'vlan/native' && rand() < 0.5 ? { network: w } : { network: w, channel }));
            expect(await finished(api, id), `${node}.${nic} connect ${w}`).to.include({ status: 'DONE', channel, new_network: w });
            m[channel] = w;
          } else {
            const channel = attached[Math.floor(rand() * attached.length)];
            id = await accepted(api.post(`/node/${node}/nic/${nic}/detach_network`, { network: m[channel] }));
            expect(await finished(api, id), `${node}.${nic} detach ${m[channel]}`).to.include({ status: 'DONE', channel, new_network: null });
            delete m[channel];
          }
          actions++;
        }
      };
      const jobs: Promise<void>[] = [];
      for (let i = 0; i < NODES.length; i++) for (const nic of ['e0', 'e1']) jobs.push(worker(i, nic));
      await Promise.all(jobs);
      expect(actions).to.equal(NODES.length * 2 * STEPS);

      const shown = await expectServiceMatchesSwitches(NODES);
      for (const n of NODES) expect(shown[n].nics, n).to.deep.equal(model[n]);
      // attachments of each network are exactly the nics carrying it
      for (const w of Object.keys(vl)) {
        const att = (await must(api.get(`/network/${w}/attachments`))).body as Record<string, { nic: string; channel: string; project: string }>;
        const carriers = NODES.flatMap((n, i) => Object.entries(model[n]).flatMap(([nic, nets]) =>
          Object.entries(nets).filter(([, x]) => x === w).map(([channel]) => ({ node: n, nic, channel, project: projectOf(i) }))));
        expect(Object.keys(att).sort(), w).to.deep.equal([...new Set(carriers.map((c) => c.node))].sort());
        for (const [node, a] of Object.entries(att)) {
          expect(carriers, `${w} on ${node}`).to.deep.include({ node, ...a });
        }
      }
      // the work really was spread over every switch
      for (const s of SWITCHES) expect(Object.keys(ts.mockSwitch.ports(s)).length, s).to.be.at.least(8);
    });
  });

  describe('one node\'s actions apply in acceptance order, even on different switches', () => {
    before(async () => {
      await network('ord', 'admin', 'pa');
      // x0 on s0 (kept busy by fillers), x1 on s1 and x2 on s2 (idle)
      await makeNode(api, 'x', ['x0', 'x1', 'x2']);
      await wire('x', 'x0', 's0', 'gi1/0/6');
      await wire('x', 'x1', 's1', 'gi1/0/6');
      await wire('x', 'x2', 's2', 'gi1/0/6');
      await must(api.post('/project/pa/connect_node', { node: 'x' }));
      // y: another node on s1, to show that s1 itself is free
      await makeNode(api, 'y', ['y1']);
      await wire('y', 'y1', 's1', 'gi1/0/12');
      await must(api.post('/project/pa/connect_node', { node: 'y' }));
      for (let k = 0; k < 10; k++) {
        await makeNode(api, `f${k}`, ['eth0']);
        await wire(`f${k}`, 'eth0', 's0', `gi1/0/${13 + k}`);
        await must(api.post('/project/pa/connect_node', { node: `f${k}` }));
      }
    });

    it('completes x0 (busy switch), then x1, then x2 although their switches were idle', async () => {
      const v = vl.ord;
      const fillers = await Promise.all(Array.from({ length: 10 }, (_, k) => accepted(api.post(`/node/f${k}/nic/eth0/connect_network`, { network: 'ord' }))));
      const a = await accepted(api.post('/node/x/nic/x0/connect_network', { network: 'ord' }));
      const b = await accepted(api.post('/node/x/nic/x1/connect_network', { network: 'ord', channel: `vlan/${v}` }));
      const c = await accepted(api.post('/node/x/nic/x2/connect_network', { network: 'ord' }));
      const yid = await accepted(api.post('/node/y/nic/y1/connect_network', { network: 'ord' }));

      // Watch the switches themselves: the tick at which each port first carries the VLAN.
      const ports = { a: ['s0', 'gi1/0/6'], b: ['s1', 'gi1/0/6'], c: ['s2', 'gi1/0/6'], y: ['s1', 'gi1/0/12'] } as const;
      const seen: Partial<Record<keyof typeof ports, number>> = {};
      let tick = 0;
      let watching = true;
      const watcher = (async () => {
        while (watching) {
          tick++;
          for (const [k, [sw, port]] of Object.entries(ports) as [keyof typeof ports, readonly [string, string]][]) {
            const p = ts.mockSwitch.port(sw, port);
            if (seen[k] === undefined && (p.native === v || p.tagged.includes(v))) seen[k] = tick;
          }
          await new Promise((r) => setImmediate(r));
        }
      })();

      // Watch the statuses, newest first in each round: DONE is final, so c DONE ⇒ b DONE ⇒ a DONE.
      let rounds = 0;
      let yDoneBeforeA = false;
      for (;;) {
        const sy = (await must(api.get(`/networking_action/${yid}`))).body.status;
        const sc = (await must(api.get(`/networking_action/${c}`))).body.status;
        const sb = (await must(api.get(`/networking_action/${b}`))).body.status;
        const sa = (await must(api.get(`/networking_action/${a}`))).body.status;
        rounds++;
        if (sc === 'DONE') expect(sb, 'x2 finished before x1').to.equal('DONE');
        if (sb === 'DONE') expect(sa, 'x1 finished before x0').to.equal('DONE');
        if (sy === 'DONE' && sa === 'PENDING') yDoneBeforeA = true;
        if (sa !== 'PENDING' && sb !== 'PENDING' && sc !== 'PENDING' && sy !== 'PENDING') break;
        await sleep(5);
      }
      watching = false;
      await watcher;
      for (const id of [...fillers, a, b, c, yid]) expect((await finished(api, id)).status).to.equal('DONE');

      expect(seen.a, 'x0 applied').to.be.a('number');
      expect(seen.b, 'x1 applied').to.be.a('number');
      expect(seen.c, 'x2 applied').to.be.a('number');
      expect(seen.a!).to.be.at.most(seen.b!);
      expect(seen.b!).to.be.at.most(seen.c!);
      // the premise: s1 was free (y, another node on it, finished while x0 still waited on s0)
      expect(yDoneBeforeA, 'y1 on s1 was done while x0 was pending').to.equal(true);
      expect(seen.y!).to.be.below(seen.a!);
      expect(rounds).to.be.greaterThan(1);

      const list = (await must(api.get('/node/x/networking_actions'))).body.map((s: any) => s.status_id);
      expect(list).to.deep.equal([c, b, a]);
      await expectServiceMatchesSwitches(['x', 'y']);
      expect((await showNode('x')).nics).to.deep.equal({ x0: { 'vlan/native': 'ord' }, x1: { [`vlan/${v}`]: 'ord' }, x2: { 'vlan/native': 'ord' } });
    });

    it('queues detaches and a reconnect across nics in acceptance order, ending equal to the switches', async () => {
      // x0 already carries ord natively; queue detach, then (after it) a tagged connect
      const d = await accepted(api.post('/node/x/nic/x0/detach_network', { network: 'ord' }));
      const e = await accepted(api.post('/node/x/nic/x1/detach_network', { network: 'ord' }));
      expect((await finished(api, d)).status).to.equal('DONE');
      const f = await accepted(api.post('/node/x/nic/x0/connect_network', { network: 'ord', channel: `vlan/${vl.ord}` }));
      expect((await finished(api, e)).status).to.equal('DONE');
      expect((await finished(api, f)).status).to.equal('DONE');
      expect((await must(api.get('/node/x/networking_actions'))).body.slice(0, 3).map((s: any) => s.status_id)).to.deep.equal([f, e, d]);
      expect(ts.mockSwitch.port('s0', 'gi1/0/6')).to.deep.equal({ native: null, tagged: [vl.ord] });
      expect(ts.mockSwitch.port('s1', 'gi1/0/6')).to.deep.equal({ native: null, tagged: [] });
      await expectServiceMatchesSwitches(['x']);
    });
  });

  describe('network_delete, project_detach_node, revoke and grant racing in-flight connects', () => {
    const G = Array.from({ length: 12 }, (_, k) => `g${k}`);
    before(async () => {
      // g nodes on s1..s3, ports 13..16
      for (let k = 0; k < G.length; k++) {
        await makeNode(api, G[k], ['eth0']);
        await wire(G[k], 'eth0', SWITCHES[1 + (k % 3)], `gi1/0/${13 + Math.floor(k / 3)}`);
      }
    });

    it('never leaves an attachment to a deleted network, a free node with attachments, or one without access', async () => {
      const ROUNDS = 5;
      const tally = { connect202: 0, connect409: 0, connect404: 0, delete200: 0, delete409: 0, revoke200: 0, revoke409: 0, grant200: 0, grant409: 0, detach200: 0, detach409: 0 };
      const rand = rng(42);
      for (let r = 0; r < ROUNDS; r++) {
        for (const g of G) {
          const s = await showNode(g);
          if (!s.project) await must(api.post('/project/pa/connect_node', { node: g }));
        }
        // rA: admin network with access pa (deleted and revoked), rP: pa's own (deleted), rQ: public
        // (deleted; a grant to pb races too), rS: admin, shared with pa and pb (pa revoked),
        // rG: public (granted to pb: pa's nodes would lose access)
        const W = [`rA${r}`, `rP${r}`, `rQ${r}`, `rS${r}`, `rG${r}`];
        await network(W[0], 'admin', 'pa');
        await network(W[1], 'pa', 'pa');
        await network(W[2], 'admin', '');
        await network(W[3], 'admin', 'pa');
        await must(api.put(`/network/${W[3]}/access/pb`));
        await network(W[4], 'admin', '');

        const ids: string[] = [];
        const calls: (() => Promise<void>)[] = [];
        const jitter = () => sleep(Math.floor(rand() * 3 * DELAY));
        G.forEach((g, k) => {
          calls.push(async () => {
            await jitter();
            const res = await api.post(`/node/${g}/nic/eth0/connect_network`, { network: W[k % W.length] });
            if (res.status === 202) { tally.connect202++; ids.push(res.body.status_id); }
            else if (res.status === 409) tally.connect409++;
            else if (res.status === 404) tally.connect404++;
            else expect.fail(`connect ${g} ${W[k % W.length]}: ${res.status} ${res.text}`);
          });
        });
        for (const w of [W[0], W[1], W[2]]) {
          calls.push(async () => {
            await jitter();
            const res = await api.del(`/network/${w}`);
            expect([200, 409], `delete ${w}: ${res.text}`).to.include(res.status);
            res.status === 200 ? tally.delete200++ : tally.delete409++;
          });
        }
        for (const w of [W[0], W[3]]) {
          calls.push(async () => {
            await jitter();
            const res = await api.del(`/network/${w}/access/pa`);
            // 404: W[0] was deleted first
            expect([200, 404, 409], `revoke ${w}: ${res.text}`).to.include(res.status);
            if (res.status === 200) tally.revoke200++;
            if (res.status === 409) tally.revoke409++;
          });
        }
        for (const w of [W[2], W[4]]) {
          calls.push(async () => {
            await jitter();
            const res = await api.put(`/network/${w}/access/pb`);
            // 404: W[2] was deleted first
            expect([200, 404, 409], `grant ${w}: ${res.text}`).to.include(res.status);
            if (res.status === 200) tally.grant200++;
            if (res.status === 409) tally.grant409++;
          });
        }
        for (const g of G.filter((_, k) => k % 3 === 0)) {
          calls.push(async () => {
            await jitter();
            const res = await api.post('/project/pa/detach_node', { node: g });
            expect([200, 409], `detach_node ${g}: ${res.text}`).to.include(res.status);
            res.status === 200 ? tally.detach200++ : tally.detach409++;
          });
        }
        await Promise.all(calls.map((f) => f()));
        for (const id of ids) expect((await finished(api, id)).status, id).to.equal('DONE');

        // the invariants, once everything has settled
        const shown = await expectServiceMatchesSwitches(G);
        const networks = (await must(api.get('/networks'))).body as Record<string, { projects: string[] | null }>;
        for (const g of G) {
          const { project, nics } = shown[g];
          const nets = Object.values(nics.eth0);
          if (!project) expect(nets, `free node ${g} has attachments`).to.deep.equal([]);
          for (const w of nets) {
            expect(networks, `${g} attached to deleted network ${w}`).to.have.property(w);
            const access = networks[w].projects;
            if (access !== null) expect(access, `${g} (${project}) attached to ${w} without access`).to.include(project);
            expect((await must(api.get(`/network/${w}/attachments`))).body[g], `attachments of ${w}`).to.deep.equal({ nic: 'eth0', channel: 'vlan/native', project });
          }
        }
        for (const w of W) {
          if (!networks[w]) continue;
          const att = (await must(api.get(`/network/${w}/attachments`))).body;
          for (const g of Object.keys(att)) expect(Object.values(shown[g].nics.eth0), `${w} lists ${g}`).to.include(w);
        }

        // clean up: detach everything, then every network of the round can go (nothing stale blocks it)
        const detaches: string[] = [];
        for (const g of G) {
          for (const w of Object.values(shown[g].nics.eth0)) detaches.push(await accepted(api.post(`/node/${g}/nic/eth0/detach_network`, { network: w })));
        }
        for (const id of detaches) expect((await finished(api, id)).status).to.equal('DONE');
        for (const w of W) if (networks[w]) await must(api.del(`/network/${w}`));
        await expectServiceMatchesSwitches(G);
      }
      // both sides of each race happened at least once over the rounds
      expect(tally.connect202, JSON.stringify(tally)).to.be.greaterThan(0);
      expect(tally.connect409 + tally.connect404, JSON.stringify(tally)).to.be.greaterThan(0);
      expect(tally.delete200, JSON.stringify(tally)).to.be.greaterThan(0);
      expect(tally.delete409, JSON.stringify(tally)).to.be.greaterThan(0);
      expect(tally.grant200 + tally.grant409, JSON.stringify(tally)).to.be.greaterThan(0);
      expect(tally.detach409 + tally.detach200, JSON.stringify(tally)).to.equal(ROUNDS * 4);
    });
  });

  after(async () => {
    // every action of every node ended DONE (no ERROR, nothing left PENDING)
    for (const node of (await must(api.get('/nodes/all'))).body as string[]) {
      const list = (await must(api.get(`/node/${node}/networking_actions`))).body as any[];
      expect(list.filter((a) => a.status !== 'DONE'), node).to.deep.equal([]);
    }
  });
});
