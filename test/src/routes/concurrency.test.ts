/**
 * Concurrency over real HTTP (docs/api-conventions.md §1: of concurrent calls that
 * conflict, exactly one succeeds). Many requests are in flight at once; every test checks that
 * the answers name exactly one winner and that every read agrees with the answers.
 */
import { expect } from 'chai';
import { startTestServer, TestServer, Client, Creds, Res, must, makeNode, makeUser, mockSwitch, obm } from '../../helpers/server';

/** Fire every call at once (all requests are sent before any answer is awaited). */
async function all<T>(items: T[], call: (item: T, i: number) => Promise<Res>): Promise<Res[]> {
  return Promise.all(items.map((it, i) => call(it, i)));
}
/**
 * Like all(), but each call starts after a pseudo-random delay of 0..spreadMs ms, so that
 * some requests arrive while others are being committed (not only all against one state).
 */
async function staggered<T>(items: T[], spreadMs: number, seed: number, call: (item: T, i: number) => Promise<Res>): Promise<Res[]> {
  const delays = shuffled(items.map((_, i) => Math.floor((i * spreadMs) / Math.max(1, items.length - 1))), seed);
  return Promise.all(items.map(async (it, i) => {
    await new Promise((r) => setTimeout(r, delays[i]));
    return call(it, i);
  }));
}
const statuses = (rs: Res[]) => rs.map((r) => r.status);
const count = (rs: Res[], status: number) => rs.filter((r) => r.status === status).length;
const range = (n: number) => Array.from({ length: n }, (_, i) => i);
/** Deterministic shuffle, so runs are reproducible but the order is not trivially regular. */
function shuffled<T>(xs: T[], seed: number): T[] {
  const out = [...xs];
  let s = seed || 1;
  for (let i = out.length - 1; i > 0; i--) {
    s = (s * 1103515245 + 12345) & 0x7fffffff;
    const j = s % (i + 1);
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}
function expectErrors(rs: Res[]): void {
  for (const r of rs) {
    if (r.status >= 400) {
      expect(r.body, r.text).to.be.an('object');
      expect(r.body.type).to.be.a('string');
      expect(r.body.msg).to.be.a('string');
    }
  }
}

describe('concurrency: conflicting calls over HTTP have exactly one winner', function () {
  this.timeout(30_000);
  let ts: TestServer;
  let api: Client;
  /** racer i is a member of every race project numbered i */
  const racers: Creds[] = [];

  before(async () => {
    ts = await startTestServer();
    api = ts.api;
    const made = await Promise.all(range(32).map((i) => makeUser(api, `racer${i}`, `pw${i}`)));
    racers.push(...made);
  });

  describe('project_connect_node of one free node from many projects', () => {
    for (const n of [8, 32]) {
      it(`${n} parallel reservations (by members of ${n} projects): one 200, ${n - 1} 409, and every read names the winner`, async () => {
        for (let round = 0; round < 4; round++) {
          const node = `rn${n}-${round}`;
          await makeNode(api, node, ['eth0']);
          const projects = range(n).map((i) => `rp${n}-${round}-${i}`);
          for (const [i, p] of projects.entries()) {
            await must(api.put(`/project/${p}`));
            await must(api.post(`/auth/basic/user/racer${i}/add_project`, { project: p }));
          }
          const rs = await all(projects, (p, i) => api.with(racers[i]).post(`/project/${p}/connect_node`, { node }));
          expect(count(rs, 200), String(statuses(rs))).to.equal(1);
          expect(count(rs, 409), String(statuses(rs))).to.equal(n - 1);
          expectErrors(rs);
          const winner = projects[rs.findIndex((r) => r.status === 200)];

          expect((await api.get(`/node/${node}`)).body.project).to.equal(winner);
          const lists = await all(projects, (p) => api.get(`/project/${p}/nodes`));
          projects.forEach((p, i) => expect(lists[i].body, p).to.deep.equal(p === winner ? [node] : []));
          expect((await api.get('/nodes/free')).body).to.not.include(node);
          expect((await api.get('/nodes/all')).body).to.include(node);
          // The winner's member sees it; a loser's member does not.
          const wi = projects.indexOf(winner);
          expect((await api.with(racers[wi]).get(`/node/${node}`)).status).to.equal(200);
          expect((await api.with(racers[(wi + 1) % n]).get(`/node/${node}`)).status).to.equal(401);
        }
      });
    }

    it('8 parallel project_detach_node of one node by its project: one 200, seven 409; the node is free', async () => {
      await must(api.put('/project/det'));
      for (let round = 0; round < 4; round++) {
        const node = `det-${round}`;
        await makeNode(api, node);
        await must(api.post('/project/det/connect_node', { node }));
        const rs = await all(range(8), () => api.post('/project/det/detach_node', { node }));
        expect(count(rs, 200), String(statuses(rs))).to.equal(1);
        expect(count(rs, 409), String(statuses(rs))).to.equal(7);
        expect((await api.get(`/node/${node}`)).body.project).to.equal(null);
        expect((await api.get('/nodes/free')).body).to.include(node);
        expect((await api.get('/project/det/nodes')).body).to.not.include(node);
      }
    });

    it('a node reserved and detached many times concurrently ends where the answers say', async () => {
      await must(api.put('/project/flip-a'));
      await must(api.put('/project/flip-b'));
      await makeNode(api, 'flip');
      // connect from a, connect from b, detach from a, detach from b, interleaved.
      const calls = shuffled(range(60), 7).map((i) => ({ proj: i % 2 ? 'flip-a' : 'flip-b', op: i % 4 < 2 ? 'connect_node' : 'detach_node' }));
      const rs = await all(calls, (c) => api.post(`/project/${c.proj}/${c.op}`, { node: 'flip' }));
      for (const r of rs) expect([200, 409], r.text).to.include(r.status);
      const ok = (proj: string, op: string) => calls.filter((c, i) => c.proj === proj && c.op === op && rs[i].status === 200).length;
      const heldA = ok('flip-a', 'connect_node') - ok('flip-a', 'detach_node');
      const heldB = ok('flip-b', 'connect_node') - ok('flip-b', 'detach_node');
      // Each project's successful connects and detaches alternate; at most one holds the node.
      expect(heldA).to.be.oneOf([0, 1]);
      expect(heldB).to.be.oneOf([0, 1]);
      expect(heldA + heldB).to.be.at.most(1);
      const owner = heldA ? 'flip-a' : heldB ? 'flip-b' : null;
      expect((await api.get('/node/flip')).body.project).to.equal(owner);
      expect((await api.get('/project/flip-a/nodes')).body).to.deep.equal(owner === 'flip-a' ? ['flip'] : []);
      expect((await api.get('/project/flip-b/nodes')).body).to.deep.equal(owner === 'flip-b' ? ['flip'] : []);
      expect((await api.get('/nodes/free')).body.includes('flip')).to.equal(owner === null);
    });
  });

  describe('wiring nics to ports', () => {
    before(async () => {
      await must(api.put('/switch/csw', mockSwitch));
    });

    for (const ports of [2, 8]) {
      it(`${ports} ports claiming the same nic in parallel: one 200, ${ports - 1} 409; show_node and show_port agree`, async () => {
        for (let round = 0; round < 5; round++) {
          const node = `wn${ports}-${round}`;
          await makeNode(api, node, ['eth0']);
          const names = range(ports).map((i) => `gi${ports}/${round}/${i}`);
          for (const p of names) await must(api.put(`/switch/csw/port/${p}`));
          const rs = await all(names, (p) => api.post(`/switch/csw/port/${p}/connect_nic`, { node, nic: 'eth0' }));
          expect(count(rs, 200), String(statuses(rs))).to.equal(1);
          expect(count(rs, 409), String(statuses(rs))).to.equal(ports - 1);
          expectErrors(rs);
          const winner = names[rs.findIndex((r) => r.status === 200)];

          const nic = (await api.get(`/node/${node}`)).body.nics[0];
          expect(nic).to.include({ label: 'eth0', port: winner, switch: 'csw' });
          for (const p of names) {
            const show = (await api.get(`/switch/csw/port/${p}`)).body;
            expect(show, p).to.deep.equal(p === winner ? { node, nic: 'eth0', networks: {} } : {});
          }
        }
      });
    }

    it('the same port claimed by two (and eight) nics in parallel: one winner; show_port and show_node agree', async () => {
      for (const nics of [2, 8]) {
        for (let round = 0; round < 5; round++) {
          const port = `te${nics}/${round}`;
          await must(api.put(`/switch/csw/port/${port}`));
          // half the nics on one node, the rest on their own nodes
          const claims = range(nics).map((i) => ({ node: `pn${nics}-${round}-${i % 2 ? 0 : i}`, nic: `eth${i}` }));
          for (const node of new Set(claims.map((c) => c.node))) await must(api.put(`/node/${node}`, { obm: obm() }));
          for (const c of claims) await must(api.put(`/node/${c.node}/nic/${c.nic}`, { macaddr: c.nic }));
          const rs = await all(claims, (c) => api.post(`/switch/csw/port/${port}/connect_nic`, c));
          expect(count(rs, 200), String(statuses(rs))).to.equal(1);
          expect(count(rs, 409), String(statuses(rs))).to.equal(nics - 1);
          const winner = claims[rs.findIndex((r) => r.status === 200)];
          expect((await api.get(`/switch/csw/port/${port}`)).body).to.deep.equal({ ...winner, networks: {} });
          for (const c of claims) {
            const nic = (await api.get(`/node/${c.node}`)).body.nics.find((x: { label: string }) => x.label === c.nic);
            const won = c === winner;
            expect(nic, `${c.node}/${c.nic}`).to.include({ port: won ? port : null, switch: won ? 'csw' : null });
          }
        }
      }
    });

    it('connect_nic racing detach_nic and switch_delete_port on one port ends consistently', async () => {
      for (let round = 0; round < 10; round++) {
        const port = `gi9/${round}`;
        const node = `cd-${round}`;
        await must(api.put(`/switch/csw/port/${port}`));
        await makeNode(api, node, ['eth0']);
        const ops = shuffled(['connect', 'detach', 'delete', 'connect', 'detach'], round + 1);
        const rs = await all(ops, (op) =>
          op === 'connect' ? api.post(`/switch/csw/port/${port}/connect_nic`, { node, nic: 'eth0' })
            : op === 'detach' ? api.post(`/switch/csw/port/${port}/detach_nic`)
              : api.del(`/switch/csw/port/${port}`));
        expectErrors(rs);
        for (const r of rs) expect(r.status, r.text).to.be.below(500);
        const show = await api.get(`/switch/csw/port/${port}`);
        const nic = (await api.get(`/node/${node}`)).body.nics[0];
        const portListed = (await api.get('/switch/csw')).body.ports.includes(port);
        const deleted = rs[ops.indexOf('delete')].status === 200;
        expect(portListed).to.equal(!deleted);
        if (deleted) {
          expect(show.status).to.equal(404);
          expect(nic).to.include({ port: null, switch: null });
        } else if (show.body.node) {
          expect(show.body).to.deep.equal({ node, nic: 'eth0', networks: {} });
          expect(nic).to.include({ port, switch: 'csw' });
        } else {
          expect(show.body).to.deep.equal({});
          expect(nic).to.include({ port: null, switch: null });
        }
        // answers agree with the end state: connects minus detaches that succeeded
        const wired = ops.filter((o, i) => o === 'connect' && rs[i].status === 200).length - ops.filter((o, i) => o === 'detach' && rs[i].status === 200).length;
        expect(wired).to.equal(show.body?.node ? 1 : 0);
      }
    });
  });

  describe('same-name creations', () => {
    const kinds: [string, (name: string) => Promise<Res>, (name: string) => Promise<boolean>][] = [
      ['project_create', (x) => api.put(`/project/${x}`), async (x) => (await api.get('/projects')).body.includes(x)],
      ['node_register', (x) => api.put(`/node/${x}`, { obm: obm() }), async (x) => (await api.get(`/node/${x}`)).status === 200],
      ['switch_register', (x) => api.put(`/switch/${x}`, mockSwitch), async (x) => (await api.get(`/switch/${x}`)).status === 200],
      ['network_create', (x) => api.put(`/network/${x}`, { owner: 'admin', access: '', net_id: '' }), async (x) => (await api.get(`/network/${x}`)).status === 200],
      ['user_create', (x) => api.put(`/auth/basic/user/${x}`, { password: 'pw' }), async (x) => (await api.with({ user: x, password: 'pw' }).get('/nodes/all')).status === 200],
    ];
    for (const [call, create, exists] of kinds) {
      it(`8 parallel ${call} of one name: one 200, seven 409`, async () => {
        for (let round = 0; round < 3; round++) {
          const name = `same-${call}-${round}`;
          const rs = await all(range(8), () => create(name));
          expect(count(rs, 200), String(statuses(rs))).to.equal(1);
          expect(count(rs, 409), String(statuses(rs))).to.equal(7);
          expectErrors(rs);
          expect(await exists(name)).to.equal(true);
        }
      });
    }

    it('8 parallel user_add_project of one user to one project: one 200, seven 409', async () => {
      await must(api.put('/project/memb'));
      await makeUser(api, 'memb-user', 'pw');
      const rs = await all(range(8), () => api.post('/auth/basic/user/memb-user/add_project', { project: 'memb' }));
      expect(count(rs, 200), String(statuses(rs))).to.equal(1);
      expect(count(rs, 409), String(statuses(rs))).to.equal(7);
      expect((await api.with({ user: 'memb-user', password: 'pw' }).get('/project/memb/nodes')).status).to.equal(200);
      // ... and one removal wins too
      const rm = await all(range(8), () => api.post('/auth/basic/user/memb-user/remove_project', { project: 'memb' }));
      expect(count(rm, 200), String(statuses(rm))).to.equal(1);
      expect(count(rm, 404), String(statuses(rm))).to.equal(7);
      expect((await api.with({ user: 'memb-user', password: 'pw' }).get('/project/memb/nodes')).status).to.equal(401);
    });

    it('8 parallel grants of one project on one network: one 200, seven 409; then 8 revokes: one 200, seven 404', async () => {
      await must(api.put('/project/gr'));
      await must(api.put('/network/grnet', { owner: 'admin', access: '', net_id: '' }));
      const rs = await all(range(8), () => api.put('/network/grnet/access/gr'));
      expect(count(rs, 200), String(statuses(rs))).to.equal(1);
      expect(count(rs, 409), String(statuses(rs))).to.equal(7);
      expect((await api.get('/network/grnet')).body.access).to.deep.equal(['gr']);
      const rv = await all(range(8), () => api.del('/network/grnet/access/gr'));
      expect(count(rv, 200), String(statuses(rv))).to.equal(1);
      expect(count(rv, 404), String(statuses(rv))).to.equal(7);
      expect((await api.get('/network/grnet')).body.access).to.equal(null);
    });
  });

  describe('interleaved create and delete of one name', () => {
    const kinds: {
      call: string;
      create: (x: string) => Promise<Res>;
      remove: (x: string) => Promise<Res>;
      /** the failure statuses docs/api-conventions.md gives: create of an existing one, delete of a missing one */
      fails: [number, number];
      exists: (x: string) => Promise<boolean>;
    }[] = [
      {
        call: 'project', create: (x) => api.put(`/project/${x}`), remove: (x) => api.del(`/project/${x}`), fails: [409, 409],
        exists: async (x) => {
          const listed = (await api.get('/projects')).body.includes(x);
          expect((await api.get(`/project/${x}/nodes`)).status).to.equal(listed ? 200 : 404);
          return listed;
        },
      },
      {
        call: 'node', create: (x) => api.put(`/node/${x}`, { obm: obm() }), remove: (x) => api.del(`/node/${x}`), fails: [409, 404],
        exists: async (x) => {
          const shown = (await api.get(`/node/${x}`)).status === 200;
          expect((await api.get('/nodes/all')).body.includes(x)).to.equal(shown);
          expect((await api.get('/nodes/free')).body.includes(x)).to.equal(shown);
          return shown;
        },
      },
      {
        call: 'network', create: (x) => api.put(`/network/${x}`, { owner: 'admin', access: '', net_id: '' }), remove: (x) => api.del(`/network/${x}`), fails: [409, 404],
        exists: async (x) => {
          const shown = (await api.get(`/network/${x}`)).status === 200;
          expect(x in (await api.get('/networks')).body).to.equal(shown);
          return shown;
        },
      },
      {
        call: 'project network', create: (x) => api.put(`/network/${x}`, { owner: 'ilv', access: 'ilv', net_id: '' }), remove: (x) => api.del(`/network/${x}`), fails: [409, 404],
        exists: async (x) => {
          const shown = (await api.get(`/network/${x}`)).status === 200;
          expect((await api.get('/project/ilv/networks')).body.includes(x)).to.equal(shown);
          return shown;
        },
      },
      {
        call: 'switch', create: (x) => api.put(`/switch/${x}`, mockSwitch), remove: (x) => api.del(`/switch/${x}`), fails: [409, 404],
        exists: async (x) => {
          const shown = (await api.get(`/switch/${x}`)).status === 200;
          expect((await api.get('/switches')).body.includes(x)).to.equal(shown);
          return shown;
        },
      },
    ];

    before(async () => {
      await must(api.put('/project/ilv'));
    });

    for (const k of kinds) {
      it(`${k.call}: 40 interleaved creates and deletes, 8 rounds: the end state matches the count of 200s`, async () => {
        for (let round = 0; round < 8; round++) {
          const name = `ilv-${k.call.replace(' ', '-')}-${round}`;
          const startExists = round % 2 === 1;
          if (startExists) await must(k.create(name));
          const ops = shuffled(range(40).map((i) => (i % 2 ? 'delete' : 'create')), round + 11);
          // even rounds: all at once; odd rounds: spread over 40 ms
          const rs = round % 4 < 2
            ? await all(ops, (op) => (op === 'create' ? k.create(name) : k.remove(name)))
            : await staggered(ops, 40, round, (op) => (op === 'create' ? k.create(name) : k.remove(name)));
          expectErrors(rs);
          const created = ops.filter((o, i) => o === 'create' && rs[i].status === 200).length;
          const deleted = ops.filter((o, i) => o === 'delete' && rs[i].status === 200).length;
          ops.forEach((o, i) => expect([200, o === 'create' ? k.fails[0] : k.fails[1]], `${o}: ${rs[i].text}`).to.include(rs[i].status));
          // Successful creates and deletes alternate, so they differ by at most one.
          const net = (startExists ? 1 : 0) + created - deleted;
          expect(net, `created ${created}, deleted ${deleted}`).to.be.oneOf([0, 1]);
          expect(await k.exists(name), `created ${created}, deleted ${deleted}, started ${startExists}`).to.equal(net === 1);
        }
      });
    }
  });

  describe('project_delete racing with calls that make something refer to the project', () => {
    it('never leaves a node, network, access entry or membership referring to a deleted project (60 rounds at once)', async () => {
      const user = await makeUser(api, 'pd-user', 'pw');
      type Op = 'delete' | 'connect' | 'ownnet' | 'adminnet' | 'grant' | 'member';
      const REFS: Op[] = ['connect', 'ownnet', 'adminnet', 'grant'];
      const rounds = range(60);
      // Each round races project_delete with one kind of reference and a membership; every
      // fifth round with all of them.
      const opsOf = (r: number): Op[] => (r % 5 === 4 ? ['delete', ...REFS, 'member'] : ['delete', REFS[r % 4], 'member']);
      for (const r of rounds) {
        await must(api.put(`/project/pd${r}`));
        await makeNode(api, `pdn${r}`);
        await must(api.put(`/network/pdpub${r}`, { owner: 'admin', access: '', net_id: '' }));
      }
      const calls = shuffled(rounds.flatMap((r) => opsOf(r).map((op) => ({ r, op }))), 99);
      const rs = await staggered(calls, 25, 5, (c) => {
        const p = `pd${c.r}`;
        switch (c.op) {
          case 'delete': return api.del(`/project/${p}`);
          case 'connect': return api.post(`/project/${p}/connect_node`, { node: `pdn${c.r}` });
          case 'ownnet': return api.put(`/network/pdown${c.r}`, { owner: p, access: p, net_id: '' });
          case 'adminnet': return api.put(`/network/pdadm${c.r}`, { owner: 'admin', access: p, net_id: '' });
          case 'grant': return api.put(`/network/pdpub${c.r}/access/${p}`);
          case 'member': return api.post(`/auth/basic/user/${user.user}/add_project`, { project: p });
        }
      });
      expectErrors(rs);
      /** the answer to op in round r; undefined when the round did not race that op */
      const status = (r: number, op: Op) => rs[calls.findIndex((c) => c.r === r && c.op === op)]?.status;

      const listed = (await api.get('/networks')).body as Record<string, { projects: string[] | null }>;
      const userState = (await api.get(`/admin/actors/user/${user.user}`)).body.state;
      const outcomes = new Set<string>();
      for (const r of rounds) {
        const p = `pd${r}`;
        const del = status(r, 'delete');
        const what = `round ${r}: ${opsOf(r).map((op) => `${op} ${status(r, op)}`).join(', ')}`;
        outcomes.add(opsOf(r).map((op) => `${op}:${status(r, op)}`).join(' '));
        // Members do not block a delete; nodes, owned networks and access entries do.
        const refs = REFS.filter((op) => status(r, op) === 200);
        expect(del, what).to.equal(refs.length ? 409 : 200);
        // Every racer either got in before the delete (200) or found the project gone (404).
        for (const op of opsOf(r)) if (op !== 'delete') expect([200, 404], what).to.include(status(r, op));

        const exists = (await api.get('/projects')).body.includes(p);
        expect(exists, what).to.equal(del !== 200);
        expect((await api.get(`/node/pdn${r}`)).body.project, what).to.equal(status(r, 'connect') === 200 ? p : null);
        expect((await api.get(`/network/pdown${r}`)).status, what).to.equal(status(r, 'ownnet') === 200 ? 200 : 404);
        const adm = await api.get(`/network/pdadm${r}`);
        expect(adm.status, what).to.equal(status(r, 'adminnet') === 200 ? 200 : 404);
        if (adm.status === 200) expect(adm.body.access, what).to.deep.equal([p]);
        expect((await api.get(`/network/pdpub${r}`)).body.access, what).to.deep.equal(status(r, 'grant') === 200 ? [p] : null);
        if (!exists) {
          for (const [name, v] of Object.entries(listed)) expect(v.projects ?? [], `${what}: ${name}`).to.not.include(p);
          expect(userState.projects, what).to.not.include(p);
        } else {
          expect((await api.with(user).get(`/project/${p}/nodes`)).status, what).to.equal(status(r, 'member') === 200 ? 200 : 401);
        }
      }
      // A project re-created under a deleted name has no members, nodes or networks.
      for (const r of rounds) {
        if (status(r, 'delete') !== 200) continue;
        await must(api.put(`/project/pd${r}`));
        expect((await api.with(user).get(`/project/pd${r}/nodes`)).status).to.equal(401);
        expect((await api.get(`/project/pd${r}/nodes`)).body).to.deep.equal([]);
        expect((await api.get(`/project/pd${r}/networks`)).body).to.deep.equal([]);
      }
      // The race must actually have gone both ways for the test to mean something.
      const deleted = rounds.filter((r) => status(r, 'delete') === 200).length;
      expect(deleted, 'rounds where the delete won').to.be.above(0);
      expect(deleted, 'rounds where the delete lost').to.be.below(rounds.length);
      expect(outcomes.size, [...outcomes].join('\n')).to.be.above(3);
    });
  });

  describe('headnodes racing network_delete and project_delete (mock headnode driver)', () => {
    it('an hnic never holds a deleted network, and a deleted project never keeps a headnode (40 rounds at once)', async () => {
      const hs = await startTestServer({ headnodeDriver: 'mock' });
      const h = hs.api;
      const rounds = range(40);
      for (const r of rounds) {
        await must(h.put(`/project/hp${r}`));
        await must(h.put(`/project/hq${r}`));
        await must(h.put(`/network/hn${r}`, { owner: `hp${r}`, access: `hp${r}`, net_id: '' }));
        await must(h.put(`/headnode/hh${r}`, { project: `hp${r}`, base_img: 'base-headnode' }));
        await must(h.put(`/headnode/hh${r}/hnic/eth0`));
      }
      const results = await Promise.all(rounds.map(async (r) => {
        const net = [() => h.post(`/headnode/hh${r}/hnic/eth0/connect_network`, { network: `hn${r}` }), () => h.del(`/network/hn${r}`)];
        const proj = [() => h.put(`/headnode/hq${r}h`, { project: `hq${r}`, base_img: 'base-headnode' }), () => h.del(`/project/hq${r}`)];
        const order = r % 2 ? [0, 1] : [1, 0];
        const [a, b] = await Promise.all(order.map((i) => net[i]()));
        const [c, d] = await Promise.all(order.map((i) => proj[i]()));
        return { connect: (r % 2 ? a : b).status, netDelete: (r % 2 ? b : a).status, create: (r % 2 ? c : d).status, projDelete: (r % 2 ? d : c).status };
      }));
      const seen = new Set<string>();
      for (const r of rounds) {
        const x = results[r];
        const what = `round ${r}: ${JSON.stringify(x)}`;
        seen.add(`${x.connect}/${x.netDelete} ${x.create}/${x.projDelete}`);
        // Exactly one of each pair wins.
        expect(x.connect === 200, what).to.equal(x.netDelete !== 200);
        expect(x.create === 200, what).to.equal(x.projDelete !== 200);
        const hn = (await must(h.get(`/headnode/hh${r}`))).body;
        expect(hn.networks.eth0, what).to.equal(x.connect === 200 ? `hn${r}` : null);
        expect((await h.get(`/network/hn${r}`)).status, what).to.equal(x.netDelete === 200 ? 404 : 200);
        expect((await h.get(`/headnode/hq${r}h`)).status, what).to.equal(x.create === 200 ? 200 : 404);
        expect((await h.get('/projects')).body.includes(`hq${r}`), what).to.equal(x.projDelete !== 200);
      }
      expect(seen.size, [...seen].join(', ')).to.be.above(1);
    });
  });

  describe('bulk registration', () => {
    it('200 parallel node_register of distinct nodes all succeed and list_nodes shows every one', async () => {
      const names = range(200).map((i) => `bulk-${i}`);
      const rs = await all(names, (n, i) => api.put(`/node/${n}`, { obm: obm(`bmc-bulk-${i}`) }));
      expect(statuses(rs).filter((s) => s !== 200), rs.find((r) => r.status !== 200)?.text).to.deep.equal([]);
      const listed: string[] = (await api.get('/nodes/all')).body;
      expect(listed).to.include.members(names);
      expect(new Set(listed).size, 'no duplicates').to.equal(listed.length);
      expect((await api.get('/nodes/free')).body).to.include.members(names);
      // and 200 parallel nic registrations, one per node
      const nics = await all(names, (n) => api.put(`/node/${n}/nic/eth0`, { macaddr: n }));
      expect(count(nics, 200)).to.equal(200);
      for (const n of shuffled(names, 5).slice(0, 20)) expect((await api.get(`/node/${n}`)).body.nics[0]).to.include({ label: 'eth0', macaddr: n });
    });
  });
});

describe('concurrency: dynamic network ids', function () {
  this.timeout(30_000);
  const LO = 200;
  const SIZE = 40;
  let api: Client;

  const ids = async () => {
    const nets = (await api.get('/networks')).body as Record<string, { network_id: string }>;
    return Object.fromEntries(Object.entries(nets).map(([k, v]) => [k, v.network_id]));
  };

  before(async () => {
    const ts = await startTestServer({ vlanPool: [[LO, LO + SIZE - 1]] });
    api = ts.api;
    await must(api.put('/project/np'));
  });

  it(`${SIZE} parallel network_create with net_id "" get ${SIZE} distinct ids of the pool; freed ids are reused`, async () => {
    const names = range(SIZE).map((i) => `dyn-${i}`);
    // half admin networks, half project networks
    const rs = await all(names, (n, i) => api.put(`/network/${n}`, i % 2 ? { owner: 'admin', access: '', net_id: '' } : { owner: 'np', access: 'np', net_id: '' }));
    expect(statuses(rs).filter((s) => s !== 200), rs.find((r) => r.status !== 200)?.text).to.deep.equal([]);
    const got = await ids();
    const vlans = names.map((n) => got[n]);
    for (const v of vlans) expect(v).to.match(/^[0-9]+$/);
    expect(new Set(vlans).size, 'distinct').to.equal(SIZE);
    expect(vlans.map(Number).sort((a, b) => a - b)).to.deep.equal(range(SIZE).map((i) => LO + i));
    // show_network's channel agrees with list_networks
    for (const n of names.slice(0, 10)) expect((await api.get(`/network/${n}`)).body.channels).to.have.members(['vlan/native', `vlan/${got[n]}`]);

    // The pool is exhausted: one more is refused (not a 5xx) and takes no id.
    const extra = await api.put('/network/dyn-extra', { owner: 'admin', access: '', net_id: '' });
    expect(extra.status, extra.text).to.be.within(400, 499);
    expect((await api.get('/network/dyn-extra')).status).to.equal(404);

    // Free 10 in parallel, then 10 new networks in parallel get exactly those ids.
    const freed = names.filter((_, i) => i % 4 === 1);
    expect(count(await all(freed, (n) => api.del(`/network/${n}`)), 200)).to.equal(freed.length);
    const fresh = freed.map((n) => `${n}-again`);
    const rs2 = await all(fresh, (n) => api.put(`/network/${n}`, { owner: 'admin', access: '', net_id: '' }));
    expect(count(rs2, 200), String(statuses(rs2))).to.equal(fresh.length);
    const got2 = await ids();
    expect(fresh.map((n) => got2[n]).sort()).to.deep.equal(freed.map((n) => got[n]).sort());
    expect(new Set(Object.values(got2)).size).to.equal(Object.keys(got2).length);

    for (const n of Object.keys(got2)) await must(api.del(`/network/${n}`));
  });

  it('racing creates with a chosen pool id: one winner per id, and "" never takes an id a chosen one holds', async () => {
    for (let round = 0; round < 5; round++) {
      const chosen = String(LO + 5 + round);
      const rs = await all(range(16), (i) =>
        api.put(`/network/pick-${round}-${i}`, { owner: 'admin', access: '', net_id: i % 2 ? chosen : '' }));
      const chosenWins = range(16).filter((i) => i % 2 && rs[i].status === 200).length;
      expect(chosenWins, String(statuses(rs))).to.be.at.most(1);
      for (const [i, r] of rs.entries()) expect(r.status, r.text).to.equal(i % 2 === 0 || r.status === 200 ? 200 : 409);
      const got = await ids();
      const held = Object.values(got);
      expect(new Set(held).size, JSON.stringify(got)).to.equal(held.length);
      // If no chosen create won, a dynamic one took the id first.
      expect(held).to.include(chosen);
      for (const n of Object.keys(got)) await must(api.del(`/network/${n}`));
    }
  });

  it('interleaved create and delete of network names never leaks or doubles an id', async () => {
    for (let round = 0; round < 6; round++) {
      const ops = shuffled(range(60).map((i) => ({ name: `leak-${i % 3}`, op: i % 2 ? 'delete' : 'create' })), round + 21);
      const rs = await staggered(ops, 30, round, (o) => (o.op === 'create' ? api.put(`/network/${o.name}`, { owner: 'np', access: 'np', net_id: '' }) : api.del(`/network/${o.name}`)));
      for (const r of rs) expect([200, 404, 409], r.text).to.include(r.status);
      const got = await ids();
      for (const name of ['leak-0', 'leak-1', 'leak-2']) {
        const net = ops.reduce((acc, o, i) => acc + (o.name === name && rs[i].status === 200 ? (o.op === 'create' ? 1 : -1) : 0), 0);
        expect(net, name).to.be.oneOf([0, 1]);
        expect(name in got, name).to.equal(net === 1);
      }
      for (const n of Object.keys(got)) await must(api.del(`/network/${n}`));
    }
    // No id leaked: the whole pool is still available.
    const all40 = await all(range(SIZE), (i) => api.put(`/network/after-${i}`, { owner: 'admin', access: '', net_id: '' }));
    expect(count(all40, 200), String(statuses(all40))).to.equal(SIZE);
    expect(new Set(Object.values(await ids())).size).to.equal(SIZE);
  });
});
