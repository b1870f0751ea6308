/**
 * Referential integrity under concurrency (docs/actors.md, the ask order and its invariants):
 * deletions racing with the calls that make something refer to the deleted object. Each pair is
 * fired at once over HTTP for many rounds (the mock switch slow, so operations stay pending
 * while the deletions run); afterwards nothing refers to a deleted object, and a start on the
 * same data folder rebuilds exactly the read model the live process held.
 */
import { expect } from 'chai';
import { startTestServer, stopTestServer, TestServer, Client, Res, must, makeNode, makeUser, mockSwitch, finished } from '../../helpers/server';
import type { ReadModel } from '../../../actors/readmodel';

const range = (n: number) => Array.from({ length: n }, (_, i) => i);
const ok = (r: Res) => r.status === 200 || r.status === 202;
/** Send every call at once, in an order that varies with `round`; answers in the calls' order. */
function inTurn(round: number, calls: (() => Promise<Res>)[]): Promise<Res[]> {
  const order = calls.map((_, i) => i).sort((a, b) => ((a * 5 + round * 3) % 11) - ((b * 5 + round * 3) % 11) || a - b);
  const out: Promise<Res>[] = new Array(calls.length);
  for (const i of order) out[i] = calls[i]();
  return Promise.all(out);
}

/** Every reference between committed objects points at an object that exists. */
function danglingRefs(rm: ReadModel): string[] {
  const out: string[] = [];
  for (const [id, n] of rm.nodes) if (n.project && !rm.projects.has(n.project)) out.push(`node ${id} in deleted project ${n.project}`);
  for (const [id, nic] of rm.nics) {
    if (!rm.nodes.has(nic.node)) out.push(`nic ${id} of deleted node`);
    for (const w of Object.values(nic.networks)) if (!rm.networks.has(w)) out.push(`nic ${id} attached to deleted network ${w}`);
    const p = nic.pending;
    if (p) {
      const port = rm.port(p.switch, p.port);
      if (!port) out.push(`nic ${id} has an operation pending on deleted port ${p.switch}/${p.port}`);
      else if (port.wire?.node !== nic.node || port.wire.nic !== nic.name) out.push(`nic ${id} has an operation pending on port ${p.switch}/${p.port} not wired to it`);
      if (!rm.switches.has(p.switch)) out.push(`nic ${id} has an operation pending on deleted switch ${p.switch}`);
      if (p.newNetwork && !rm.networks.has(p.newNetwork)) out.push(`nic ${id} connecting to deleted network ${p.newNetwork}`);
    }
  }
  for (const [id, port] of rm.ports) {
    if (!rm.switches.has(port.switch)) out.push(`port ${id} of deleted switch`);
    if (port.wire && !rm.nic(port.wire.node, port.wire.nic)) out.push(`port ${id} wired to deleted nic ${port.wire.node}/${port.wire.nic}`);
  }
  for (const [id, w] of rm.networks) {
    if (w.owner !== 'admin' && !rm.projects.has(w.owner)) out.push(`network ${id} owned by deleted project ${w.owner}`);
    for (const p of w.access) if (!rm.projects.has(p)) out.push(`network ${id} open to deleted project ${p}`);
  }
  for (const [id, u] of rm.users) for (const p of [...u.projects, ...(u.readerOf ?? [])]) if (!rm.projects.has(p)) out.push(`user ${id} member of deleted project ${p}`);
  return out;
}

/** The committed states of the read model, comparable across a restart. */
function stateOf(rm: ReadModel): unknown {
  const sorted = (m: ReadonlyMap<string, unknown>) => [...m.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return {
    projects: sorted(rm.projects), nodes: sorted(rm.nodes), nics: sorted(rm.nics), switches: sorted(rm.switches),
    ports: sorted(rm.ports), networks: sorted(rm.networks), users: sorted(rm.users),
    wiredWithoutNic: [...rm.wiredWithoutNic].sort(), wiredPorts: rm.wiredPorts,
  };
}

describe('integrity: deletions racing with uses leave no dangling reference, and a restart rebuilds the same state', function () {
  this.timeout(120_000);
  let ts: TestServer;
  let api: Client;
  const ROUNDS = 24;

  before(async () => {
    ts = await startTestServer({ mockSwitchDelayMs: 20 });
    api = ts.api;
    await must(api.put('/switch/isw', mockSwitch));
  });
  after(async () => {
    if (ts) await stopTestServer(ts);
  });

  it('node_delete racing node_register_nic: the node exists exactly when the nic does', async () => {
    const rs = await Promise.all(range(ROUNDS).map(async (r) => {
      await makeNode(api, `nd${r}`);
      const calls = [() => api.del(`/node/nd${r}`), () => api.put(`/node/nd${r}/nic/eth0`, { macaddr: 'de:ad:be:ef:00:01' })];
      const [del, reg] = await Promise.all(r % 2 ? calls.map((c) => c()) : calls.reverse().map((c) => c()).reverse());
      return { del: del.status, reg: reg.status };
    }));
    for (const [r, x] of rs.entries()) {
      expect(x.del === 200, `round ${r}: ${JSON.stringify(x)}`).to.equal(x.reg !== 200);
      expect(ts.world.rm.nodes.has(`nd${r}`)).to.equal(x.del !== 200);
    }
    expect(danglingRefs(ts.world.rm)).to.deep.equal([]);
  });

  it('nic_delete racing port_connect_nic and connect_network; port and switch deletes racing wiring', async () => {
    await must(api.put('/project/ip'));
    await must(api.put('/network/iw', { owner: 'ip', access: 'ip', net_id: '' }));
    const seen = new Set<string>();
    await Promise.all(range(ROUNDS).map(async (r) => {
      const node = `ni${r}`;
      await makeNode(api, node, ['eth0', 'eth1']);
      await must(api.put(`/switch/isw/port/gi1/0/${r}`));
      await must(api.put(`/switch/isw/port/te1/0/${r}`));
      await must(api.post(`/switch/isw/port/te1/0/${r}/connect_nic`, { node, nic: 'eth1' }));
      await must(api.post('/project/ip/connect_node', { node }));
      // eth0: deleted while wired to p; eth1 (wired to q): deleted while connected to a network;
      // port q deleted while an operation of eth1 may be pending on it.
      const rs = await inTurn(r, [
        () => api.del(`/node/${node}/nic/eth0`),
        () => api.post(`/switch/isw/port/gi1/0/${r}/connect_nic`, { node, nic: 'eth0' }),
        () => api.post(`/node/${node}/nic/eth1/connect_network`, { network: 'iw' }),
        () => api.del(`/node/${node}/nic/eth1`),
        () => api.del(`/switch/isw/port/te1/0/${r}`),
        () => api.del(`/switch/isw/port/gi1/0/${r}`),
      ]);
      for (const x of rs) expect(x.status, x.text).to.be.below(500);
      seen.add(rs.map((x) => x.status).join(' '));
      if (rs[2].status === 202) await finished(api, rs[2].body.status_id);
    }));
    expect(danglingRefs(ts.world.rm)).to.deep.equal([]);
    expect(seen.size, [...seen].join('\n')).to.be.above(1);
  });

  it('switch_delete racing port registration and wiring', async () => {
    await Promise.all(range(ROUNDS).map(async (r) => {
      const sw = `sd${r}`;
      await must(api.put(`/switch/${sw}`, mockSwitch));
      await makeNode(api, `sn${r}`, ['eth0']);
      const rs = await Promise.all([api.put(`/switch/${sw}/port/te1/1`), api.del(`/switch/${sw}`), api.post(`/switch/${sw}/port/te1/1/connect_nic`, { node: `sn${r}`, nic: 'eth0' })]);
      for (const x of rs) expect(x.status, x.text).to.be.below(500);
      expect(rs[0].status === 200 && rs[1].status === 200, `round ${r}`).to.equal(false);
    }));
    expect(danglingRefs(ts.world.rm)).to.deep.equal([]);
  });

  it('network_delete racing connect_network: no nic attached to or connecting to a deleted network', async () => {
    await must(api.put('/project/jp'));
    const seen = new Set<string>();
    await Promise.all(range(ROUNDS).map(async (r) => {
      const node = `nw${r}`;
      await makeNode(api, node, ['eth0']);
      await must(api.put(`/switch/isw/port/gi1/${r}`));
      await must(api.post(`/switch/isw/port/gi1/${r}/connect_nic`, { node, nic: 'eth0' }));
      await must(api.post('/project/jp/connect_node', { node }));
      await must(api.put(`/network/jw${r}`, { owner: 'jp', access: 'jp', net_id: '' }));
      const calls = [() => api.post(`/node/${node}/nic/eth0/connect_network`, { network: `jw${r}` }), () => api.del(`/network/jw${r}`)];
      const [c, d] = r % 2 ? await Promise.all(calls.map((f) => f())) : (await Promise.all([calls[1](), calls[0]()])).reverse();
      seen.add(`${c.status}/${d.status}`);
      expect(ok(c) && d.status === 200, `round ${r}: ${c.text} ${d.text}`).to.equal(false);
      if (c.status === 202) await finished(api, c.body.status_id);
    }));
    expect(danglingRefs(ts.world.rm)).to.deep.equal([]);
    expect(seen.size, [...seen].join(', ')).to.be.above(1);
  });

  it('user_delete racing add_project, project_delete racing network_create and connect_node', async () => {
    await Promise.all(range(ROUNDS).map(async (r) => {
      await must(api.put(`/project/up${r}`));
      await makeUser(api, `uu${r}`, 'pw');
      await makeNode(api, `un${r}`);
      const rs = await Promise.all([
        api.post(`/auth/basic/user/uu${r}/add_project`, { project: `up${r}` }),
        api.del(`/auth/basic/user/uu${r}`),
        api.put(`/network/uw${r}`, { owner: `up${r}`, access: `up${r}`, net_id: '' }),
        api.post(`/project/up${r}/connect_node`, { node: `un${r}` }),
        api.del(`/project/up${r}`),
      ]);
      for (const x of rs) expect(x.status, x.text).to.be.below(500);
    }));
    // A user created again under a deleted name starts with no memberships.
    for (const r of range(ROUNDS)) {
      if (!ts.world.rm.users.has(`uu${r}`)) {
        await makeUser(api, `uu${r}`, 'pw');
        expect(ts.world.rm.users.get(`uu${r}`)!.projects).to.deep.equal([]);
      }
    }
    expect(danglingRefs(ts.world.rm)).to.deep.equal([]);
  });

  it('a start on the same data folder rebuilds the read model the live process held, from the journal and from the checkpoint', async () => {
    const before = stateOf(ts.world.rm);
    // The live read model holds the actors' committed states.
    for (const kind of ['node', 'nic', 'port', 'network', 'project', 'user', 'switch'] as const) {
      const reg = ({ node: ts.world.nodes, nic: ts.world.nics, port: ts.world.ports, network: ts.world.networks, project: ts.world.projects, user: ts.world.users, switch: ts.world.switches } as const)[kind];
      const held = ({ node: ts.world.rm.nodes, nic: ts.world.rm.nics, port: ts.world.rm.ports, network: ts.world.rm.networks, project: ts.world.rm.projects, user: ts.world.rm.users, switch: ts.world.rm.switches } as const)[kind] as Map<string, unknown>;
      for (const id of await reg.storedIds()) {
        const stored = (await reg.inspect(id))?.state ?? undefined;
        expect(held.get(id), `${kind} ${id}`).to.deep.equal(stored ?? undefined);
      }
    }
    const dir = ts.dataDir;
    for (const checkpointEvents of [0, 20_000]) {
      await stopTestServer(ts, false);
      ts = await startTestServer({ mockSwitchDelayMs: 20, checkpointEvents }, {}, dir);
      api = ts.api;
      expect(stateOf(ts.world.rm), `checkpointEvents ${checkpointEvents}`).to.deep.equal(before);
      expect(danglingRefs(ts.world.rm)).to.deep.equal([]);
    }
  });

});
