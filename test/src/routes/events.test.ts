/**
 * GET /events: every committed change as one event, in commit order, with its fields; resumes
 * without loss or repeat; filters; access per project; bad input.
 */
import { expect } from 'chai';
import { startTestServer, stopTestServer, TestServer, Client, must, makeUser, mockSwitch, obm, finished, ADMIN, Creds, basic } from '../../helpers/server';
import { SseStream, SseEvent } from '../../helpers/sse';
import { until } from '../../helpers/wait';
import { scratchDir } from '../../helpers/scratch';
import type { PersistedEvent } from '../../../actors/persistence/engine';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { connect } from 'node:net';

/** A full garbage collection, to measure the heap (V8's gc exposed at run time). */
setFlagsFromString('--expose_gc');
const gc = runInNewContext('gc') as () => void;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function journal(ts: TestServer, after = 0): Promise<PersistedEvent[]> {
  const out: PersistedEvent[] = [];
  for await (const e of ts.world.runtime.engine.feed(after)) if (!e.key.startsWith('meta:')) out.push(e);
  return out;
}

describe('GET /events', function () {
  this.timeout(60_000);
  let ts: TestServer;
  let api: Client;
  const open = (query = '', as: Creds | null = ADMIN, lastEventId?: string) => new SseStream(`${ts.url}/events${query}`, { as, lastEventId });

  before(async () => {
    ts = await startTestServer({ headnodeDriver: 'mock', baseImages: ['base-headnode'] });
    api = ts.api;
  });
  after(() => stopTestServer(ts));

  it('gives every API change exactly its events, in commit order, with their fields (table-driven)', async () => {
    const s = open();
    expect(await s.answered()).to.equal(200);
    expect(s.headers['content-type']).to.match(/^text\/event-stream/);
    await must(api.put('/project/red'));
    const alice = await makeUser(api, 'alice', 'alice-pw', ['red']);
    const al = api.with(alice);
    // [call, then the events it must make: [type, kind, name, project]]
    type Row = [string, () => Promise<unknown>, [string, string, string, string | null][]];
    let op = '';
    const rows: Row[] = [
      ['project_create', () => must(api.put('/project/blue')), [['project.created', 'project', 'blue', 'blue']]],
      ['node_register', () => must(api.put('/node/n1', { obm: obm() })), [['node.registered', 'node', 'n1', null]]],
      ['node_register_nic', () => must(api.put('/node/n1/nic/eth0', { macaddr: 'de:ad:be:ef:00:01' })), [['nic.registered', 'nic', 'n1/eth0', null]]],
      ['node_set_metadata', () => must(api.put('/node/n1/metadata/rack', { value: 'r1' })), [['node.metadata_set', 'node', 'n1', null]]],
      ['switch_register', () => must(api.put('/switch/s1', mockSwitch)), [['switch.registered', 'switch', 's1', null]]],
      ['switch_register_port', () => must(api.put('/switch/s1/port/gi1/0/1')), [['port.registered', 'port', 's1/gi1%2F0%2F1', null]]],
      ['port_connect_nic', () => must(api.post('/switch/s1/port/gi1/0/1/connect_nic', { node: 'n1', nic: 'eth0' })), [['port.nic_connected', 'port', 's1/gi1%2F0%2F1', null]]],
      ['project_connect_node', () => must(al.post('/project/red/connect_node', { node: 'n1' })), [['project.node_added', 'node', 'n1', 'red']]],
      ['network_create', () => must(al.put('/network/rnet', { owner: 'red', access: 'red', net_id: '' })), [['network.created', 'network', 'rnet', 'red']]],
      ['network_grant_project_access', () => must(al.put('/network/rnet/access/blue')), [['network.access_granted', 'network', 'rnet', 'red']]],
      ['network_revoke_project_access', () => must(al.del('/network/rnet/access/blue')), [['network.access_revoked', 'network', 'rnet', 'red']]],
      ['node_connect_network', async () => {
        op = (await must(al.post('/node/n1/nic/eth0/connect_network', { network: 'rnet' }), 202)).body.status_id;
        expect((await finished(al, op)).status).to.equal('DONE');
      }, [['networking_action.accepted', 'nic', 'n1/eth0', 'red'], ['networking_action.finished', 'nic', 'n1/eth0', 'red'], ['port.configured', 'port', 's1/gi1%2F0%2F1', null]]],
      ['node_detach_network', async () => {
        const id = (await must(al.post('/node/n1/nic/eth0/detach_network', { network: 'rnet' }), 202)).body.status_id;
        await finished(al, id);
      }, [['networking_action.accepted', 'nic', 'n1/eth0', 'red'], ['networking_action.finished', 'nic', 'n1/eth0', 'red'], ['port.configured', 'port', 's1/gi1%2F0%2F1', null]]],
      ['headnode_create', () => must(al.put('/headnode/h1', { project: 'red', base_img: 'base-headnode' })), [['headnode.created', 'headnode', 'h1', 'red']]],
      ['headnode_create_hnic', () => must(al.put('/headnode/h1/hnic/hn0')), [['headnode.hnic_created', 'headnode', 'h1', 'red']]],
      ['headnode_connect_network', () => must(al.post('/headnode/h1/hnic/hn0/connect_network', { network: 'rnet' })), [['headnode.network_attached', 'headnode', 'h1', 'red']]],
      ['headnode_delete', () => must(al.del('/headnode/h1')), [['headnode.delete_requested', 'headnode', 'h1', 'red'], ['headnode.deleted', 'headnode', 'h1', 'red']]],
      ['user_create', () => must(api.put('/auth/basic/user/bob', { password: 'bob-pw' })), [['user.created', 'user', 'bob', null]]],
      ['user_add_project', () => must(api.post('/auth/basic/user/bob/add_project', { project: 'blue' })), [['project.user_added', 'user', 'bob', 'blue']]],
      ['user_remove_project', () => must(api.post('/auth/basic/user/bob/remove_project', { project: 'blue' })), [['project.user_removed', 'user', 'bob', 'blue']]],
      ['user_delete', () => must(api.del('/auth/basic/user/bob')), [['user.deleted', 'user', 'bob', null]]],
      ['network_delete', () => must(al.del('/network/rnet')), [['network.deleted', 'network', 'rnet', 'red']]],
      // The release powers the node off (docs/lifecycle.md), and says so.
      ['project_detach_node', () => must(al.post('/project/red/detach_node', { node: 'n1' })), [['project.node_removed', 'node', 'n1', 'red'], ['node.release_powered_off', 'node', 'n1', null]]],
      ['port_detach_nic', () => must(api.post('/switch/s1/port/gi1/0/1/detach_nic')), [['port.nic_detached', 'port', 's1/gi1%2F0%2F1', null]]],
      ['node_delete_nic', () => must(api.del('/node/n1/nic/eth0')), [['nic.deleted', 'nic', 'n1/eth0', null]]],
      ['switch_delete_port', () => must(api.del('/switch/s1/port/gi1/0/1')), [['port.deleted', 'port', 's1/gi1%2F0%2F1', null]]],
      ['switch_delete', () => must(api.del('/switch/s1')), [['switch.deleted', 'switch', 's1', null]]],
      ['node_delete', () => must(api.del('/node/n1')), [['node.deleted', 'node', 'n1', null]]],
      ['project_delete', () => must(api.del('/project/blue')), [['project.deleted', 'project', 'blue', 'blue']]],
    ];
    await s.count(3);
    for (const [call, run, expected] of rows) {
      const before = s.events.length;
      const at = (await ts.world.runtime.engine.bounds()).last;
      await run();
      await s.count(before + expected.length);
      await sleep(50);
      const got = s.events.slice(before);
      // Exactly its events: the journal's, in its order, and no more.
      const j = await journal(ts, at);
      expect(got.map((e) => e.id), call).to.deep.equal(j.map((e) => String(e.position)));
      const shape = (e: SseEvent) => [e.event, e.data.kind, e.data.name, e.data.project];
      const sorted = (x: unknown[][]) => [...x].sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
      expect(sorted(got.map(shape)), call).to.deep.equal(sorted(expected));
      for (const e of got) {
        expect(e.data.id).to.equal(e.id);
        expect(e.data.type).to.equal(e.event);
        expect(e.data.at).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
        expect(['admin', 'alice', 'hilt']).to.include(e.data.by);
        expect(e.data.data).to.be.an('object');
      }
    }
    const ids = s.events.map((e) => Number(e.id));
    for (let i = 1; i < ids.length; i++) expect(ids[i], 'ids strictly increase').to.be.above(ids[i - 1]);
    // A network operation's events carry its public status, the status id the 202 gave included.
    const fin = s.events.filter((e) => e.event === 'networking_action.finished')[0];
    expect(fin.data.data.operation).to.deep.include({ status_id: op, status: 'DONE', node: 'n1', nic: 'eth0', type: 'modify_port', channel: 'vlan/native', new_network: 'rnet' });
    expect(fin.data.by).to.equal('hilt');
    const acc = s.events.filter((e) => e.event === 'networking_action.accepted')[0];
    expect(acc.data.by).to.equal('alice');
    expect(acc.data.data.operation).to.deep.include({ status_id: op, status: 'PENDING' });
    // No secret: the BMC's and the switch's passwords are redacted.
    const text = JSON.stringify(s.events);
    expect(text).to.not.include('obm-secret');
    expect(text).to.not.include('switch-secret');
    expect(s.events.find((e) => e.event === 'node.registered')!.data.data.obm.fields.password).to.equal('[redacted]');
    s.close();
  });

  it('resumes without loss or repeat: streams cut at random points under concurrent writes add up to the journal', async () => {
    const start = (await ts.world.runtime.engine.bounds()).last;
    let writing = true;
    const writers = Array.from({ length: 4 }, async (_, w) => {
      for (let i = 0; writing; i++) {
        await must(api.put(`/node/rw${w}-${i}`, { obm: obm() }));
        if (i % 3 === 0) await must(api.put(`/node/rw${w}-${i}/metadata/k`, { value: i }));
      }
    });
    const got: SseEvent[] = [];
    let last = String(start);
    let rounds = 0;
    const rnd = (n: number) => Math.floor(Math.random() * n);
    try {
      for (; rounds < 12; rounds++) {
        // Alternately the header (as EventSource reconnects) and the query parameter.
        const s = rounds % 2 ? open('', ADMIN, last) : open(`?after=${last}`);
        expect(await s.answered()).to.equal(200);
        await s.count(1 + rnd(15), 20_000);
        // Cut at once, possibly in the middle of a frame: only whole events count.
        s.close();
        got.push(...s.events);
        last = s.events.at(-1)!.id;
      }
    } finally {
      writing = false;
      await Promise.all(writers);
    }
    // The rest, to the end of the journal.
    const end = (await ts.world.runtime.engine.bounds()).last;
    const s = open(`?after=${last}`);
    await s.until(() => (s.events.at(-1) ? Number(s.events.at(-1)!.id) >= end : Number(last) >= end), 20_000);
    s.close();
    got.push(...s.events);
    const j = await journal(ts, start);
    expect(got.map((e) => e.id)).to.deep.equal(j.map((e) => String(e.position)));
    expect(got.map((e) => `${e.data.kind}:${e.data.name}`)).to.deep.equal(j.map((e) => e.key));
    expect(rounds).to.equal(12);
  });

  it('starts at a time (since), and says 410 with the oldest id kept for an id it does not keep', async () => {
    await must(api.put('/node/early', { obm: obm() }));
    await sleep(20);
    const middle = new Date().toISOString();
    await sleep(20);
    await must(api.put('/node/late1', { obm: obm() }));
    await must(api.put('/node/late2', { obm: obm() }));
    const s = open(`?since=${middle}&kind=node`);
    await s.count(2);
    expect(s.events.map((e) => e.data.name).slice(0, 2)).to.deep.equal(['late1', 'late2']);
    expect(s.events.every((e) => e.data.at >= middle)).to.equal(true);
    s.close();
    const { first, last } = await ts.world.runtime.engine.bounds();
    for (const gone of [String(last + 1000), String(last + 1)]) {
      const g = open('', ADMIN, gone);
      expect(await g.answered(), gone).to.equal(410);
      await g.ended;
      const body = JSON.parse(g.body);
      expect(body).to.deep.include({ type: 'GoneError', oldest: String(first) });
      expect(body.msg).to.include(`since=1970-01-01T00:00:00Z reads from event ${first} on; after=${first} would skip it`);
    }
    // The way back docs/events.md gives: since, a time before what is kept, starts at the oldest
    // event kept (its id `oldest` or a later one: a meta record is not streamed), not after it.
    const kept = await journal(ts, first - 1);
    const all = open('?since=1970-01-01T00:00:00Z');
    await all.count(kept.length);
    expect(Number(all.events[0].id)).to.be.at.least(first);
    expect(all.events.map((e) => e.id)).to.deep.equal(kept.map((e) => String(e.position)));
    all.close();
    // The id of the last event is kept: the stream goes on from there.
    const ok = open(`?after=${last}`);
    expect(await ok.answered()).to.equal(200);
    ok.close();
  });

  it('filters by kind, name, project and type, each repeatable or comma-separated', async () => {
    await must(api.put('/project/fa'));
    await must(api.put('/project/fb'));
    const byKind = open('?kind=project,network');
    const byType = open('?type=node.registered&type=project.node_added');
    const byProject = open('?project=fa');
    const byName = open('?kind=node&name=fn1&name=fn2');
    const byWild = open('?type=node.*');
    for (const x of [byKind, byType, byProject, byName, byWild]) expect(await x.answered()).to.equal(200);
    await must(api.put('/node/fn1', { obm: obm() }));
    await must(api.put('/node/fn2', { obm: obm() }));
    await must(api.put('/node/fn3', { obm: obm() }));
    await must(api.post('/project/fa/connect_node', { node: 'fn1' }));
    await must(api.post('/project/fb/connect_node', { node: 'fn3' }));
    await must(api.put('/network/fnet', { owner: 'fa', access: 'fa', net_id: '' }));
    await must(api.put('/node/fn2/metadata/x', { value: 1 }));
    const marker = open();
    await must(api.put('/project/fend'));
    await marker.until(() => marker.events.some((e) => e.data.name === 'fend'));
    await sleep(50);
    const names = (x: SseStream) => x.events.map((e) => `${e.event} ${e.data.name}`);
    expect(names(byKind)).to.deep.equal(['network.created fnet', 'project.created fend']);
    expect(names(byType)).to.deep.equal(['node.registered fn1', 'node.registered fn2', 'node.registered fn3', 'project.node_added fn1', 'project.node_added fn3']);
    expect(names(byProject)).to.deep.equal(['project.node_added fn1', 'network.created fnet']);
    expect(names(byName)).to.deep.equal(['node.registered fn1', 'node.registered fn2', 'project.node_added fn1', 'node.metadata_set fn2']);
    expect(names(byWild)).to.deep.equal(['node.registered fn1', 'node.registered fn2', 'node.registered fn3', 'node.metadata_set fn2']);
    for (const x of [byKind, byType, byProject, byName, byWild, marker]) x.close();
  });

  it('frames its events right for a raw HTTP/1.1 reader (chunks) and an HTTP/1.0 one (no chunks), under a burst of commits', async () => {
    // Under load the service writes a flush's frames straight to each stream's socket (one text
    // shared by all streams, framed once as a chunk): read the bytes with no HTTP library.
    const read = (version: string) => {
      const socket = connect(Number(new URL(ts.url).port), '127.0.0.1');
      const chunks: Buffer[] = [];
      socket.on('data', (d) => chunks.push(d));
      socket.write(`GET /events?kind=node&name=burst${version} HTTP/${version}\r\nHost: localhost\r\nAuthorization: ${basic(ADMIN)}\r\n\r\n`);
      return { bytes: () => Buffer.concat(chunks), close: () => socket.destroy() };
    };
    const readers = { '1.1': read('1.1'), '1.0': read('1.0') };
    for (const r of Object.values(readers)) await until('the answer\'s head', () => r.bytes().includes(': hilt event stream'));
    // A burst of commits, so that one flush carries several frames.
    for (const v of ['1.1', '1.0']) {
      await must(api.put(`/node/burst${v}`, { obm: obm() }));
      await Promise.all(Array.from({ length: 60 }, (_, i) => must(api.put(`/node/burst${v}/metadata/k${i}`, { value: String(i) }))));
    }
    for (const r of Object.values(readers)) await until('the burst\'s frames', () => r.bytes().toString('latin1').split('"type":"node.').length - 1 >= 61);
    const frames = (body: string) => body.split('\n\n').filter((b) => b.startsWith('id: ')).map((b) => JSON.parse(b.split('\n').find((l) => l.startsWith('data: '))!.slice(6)) as { name: string; type: string });
    for (const [v, r] of Object.entries(readers)) {
      const raw = r.bytes().toString('utf8');
      r.close();
      const headEnd = raw.indexOf('\r\n\r\n');
      const head = raw.slice(0, headEnd);
      let body = raw.slice(headEnd + 4);
      expect(head, v).to.match(/^HTTP\/1\.1 200/);
      if (v === '1.1') {
        expect(head).to.match(/transfer-encoding: chunked/i);
        // Undo the chunked encoding strictly: a size line, exactly that many bytes, CRLF.
        let out = '';
        let rest = Buffer.from(body, 'utf8');
        for (;;) {
          const eol = rest.indexOf('\r\n');
          if (eol < 0) break;
          const size = parseInt(rest.subarray(0, eol).toString('latin1'), 16);
          expect(Number.isNaN(size), `chunk size line ${JSON.stringify(rest.subarray(0, eol).toString('latin1'))}`).to.equal(false);
          if (rest.length < eol + 2 + size + 2) break;
          out += rest.subarray(eol + 2, eol + 2 + size).toString('utf8');
          expect(rest.subarray(eol + 2 + size, eol + 4 + size).toString('latin1')).to.equal('\r\n');
          rest = rest.subarray(eol + 4 + size);
        }
        expect(rest.length, 'bytes left after the last whole chunk').to.equal(0);
        body = out;
      } else {
        expect(head).not.to.match(/transfer-encoding/i);
        expect(body).not.to.match(/^[0-9a-f]+\r\n/m);
      }
      const got = frames(body);
      expect(got.length, v).to.equal(61);
      expect(got.every((e) => e.name === `burst${v}`), v).to.equal(true);
      expect(got[0].type).to.equal('node.registered');
      expect(got.slice(1).every((e) => e.type === 'node.metadata_set')).to.equal(true);
    }
  });

  it('gives streams of the same filters and access the same frames, and each other stream its own, under a burst that flushes many frames at once', async () => {
    // A flush works out once per kind of stream (access, filters) which of its frames they want.
    await must(api.put('/project/ga'));
    const member = await makeUser(api, 'ga-user', 'ga-pw', ['ga']);
    const streams = {
      all: open(), all2: open(),
      nodes: open('?kind=node'), nodes2: open('?kind=node'),
      meta: open('?type=node.metadata_set'),
      project: open('?project=ga'),
      member: open('', member), member2: open('', member),
      memberNodes: open('?kind=node', member),
    };
    for (const x of Object.values(streams)) expect(await x.answered()).to.equal(200);
    await must(api.put('/node/gn1', { obm: obm() }));
    await must(api.put('/node/gn2', { obm: obm() }));
    await must(api.post('/project/ga/connect_node', { node: 'gn1' }));
    await Promise.all([
      ...Array.from({ length: 40 }, (_, i) => must(api.put(`/node/gn${1 + (i % 2)}/metadata/k${i}`, { value: String(i) }))),
      ...Array.from({ length: 10 }, (_, i) => must(api.put(`/project/gp${i}`))),
      must(api.put('/network/gnet', { owner: 'ga', access: 'ga', net_id: '' })),
    ]);
    await must(api.put('/project/gend'));
    await streams.all.until(() => streams.all.events.some((e) => e.data.name === 'gend'));
    await sleep(100);
    const ids = (x: SseStream) => x.events.map((e) => e.id);
    const of = (keep: (e: SseEvent) => boolean) => streams.all.events.filter(keep).map((e) => e.id);
    expect(streams.all.events.length).to.be.greaterThan(50);
    expect(ids(streams.all2)).to.deep.equal(ids(streams.all));
    expect(ids(streams.nodes)).to.deep.equal(of((e) => e.data.kind === 'node'));
    expect(ids(streams.nodes2)).to.deep.equal(ids(streams.nodes));
    expect(ids(streams.meta)).to.deep.equal(of((e) => e.event === 'node.metadata_set'));
    expect(ids(streams.project)).to.deep.equal(of((e) => e.data.project === 'ga'));
    expect(ids(streams.member)).to.deep.equal(of((e) => e.data.project === 'ga'));
    expect(ids(streams.member2)).to.deep.equal(ids(streams.member));
    expect(ids(streams.memberNodes)).to.deep.equal(of((e) => e.data.project === 'ga' && e.data.kind === 'node'));
    expect(streams.memberNodes.events.length).to.be.greaterThan(10);
    for (const x of Object.values(streams)) x.close();
  });

  it('shows a member only the events of its projects, never another project\'s (randomized), and cuts it off when it leaves', async () => {
    await must(api.put('/project/pa'));
    await must(api.put('/project/pb'));
    const a = await makeUser(api, 'pa-user', 'pa-pw', ['pa']);
    const b = await makeUser(api, 'pb-user', 'pb-pw', ['pb']);
    const sa = open('', a);
    const sb = open('', b);
    const all = open();
    for (const x of [sa, sb, all]) expect(await x.answered()).to.equal(200);
    const start = ts.world.runtime.engine;
    const nodes = Array.from({ length: 8 }, (_, i) => `pn${i}`);
    for (const n of nodes) await must(api.put(`/node/${n}`, { obm: obm() }));
    const where = new Map<string, string | null>(nodes.map((n) => [n, null]));
    for (let i = 0; i < 60; i++) {
      const n = nodes[Math.floor(Math.random() * nodes.length)];
      const p = where.get(n);
      const r = Math.random();
      if (!p) {
        const to = r < 0.5 ? 'pa' : 'pb';
        await must(api.with(to === 'pa' ? a : b).post(`/project/${to}/connect_node`, { node: n }));
        where.set(n, to);
      } else if (r < 0.4) {
        await must(api.with(p === 'pa' ? a : b).post(`/project/${p}/detach_node`, { node: n }));
        where.set(n, null);
      } else if (r < 0.7) {
        await must(api.put(`/node/${n}/metadata/m${i}`, { value: i }));
      } else {
        const net = `pnet${i}`;
        await must(api.with(p === 'pa' ? a : b).put(`/network/${net}`, { owner: p, access: p, net_id: '' }));
      }
    }
    await must(api.put('/project/pend'));
    await all.until(() => all.events.some((e) => e.data.name === 'pend'));
    await sleep(100);
    void start;
    const mine = (p: string) => all.events.filter((e) => (e.data.project === p || (e.event.startsWith('network.') && e.data.project === p))).map((e) => e.id);
    // Exactly the events of its project, none of the other's.
    expect(sa.events.every((e) => e.data.project === 'pa'), 'a sees only pa').to.equal(true);
    expect(sb.events.every((e) => e.data.project === 'pb'), 'b sees only pb').to.equal(true);
    expect(sa.events.map((e) => e.id)).to.deep.equal(mine('pa'));
    expect(sb.events.map((e) => e.id)).to.deep.equal(mine('pb'));
    expect(sa.events.length).to.be.greaterThan(5);
    // Removed from pa: its stream ends at once, and a new one sees nothing of pa.
    const t0 = Date.now();
    await must(api.post('/auth/basic/user/pa-user/remove_project', { project: 'pa' }));
    await sa.ended;
    expect(Date.now() - t0).to.be.below(2000);
    expect(sa.comments.join(' ')).to.match(/access changed/);
    const again = open('', a);
    expect(await again.answered()).to.equal(200);
    const free = nodes.find((n) => where.get(n) === 'pa');
    if (free) await must(api.put(`/node/${free}/metadata/after`, { value: 1 }));
    await must(api.post('/project/pa/connect_node', { node: 'pn-none' }).catch(() => undefined) as never).catch(() => undefined);
    await sleep(200);
    expect(again.events.filter((e) => e.data.project === 'pa')).to.deep.equal([]);
    for (const x of [sb, all, again]) x.close();
  });

  it('opens a resuming stream with its caller\'s rights after the wait for the store: a membership removed meanwhile counts, a user deleted meanwhile is a 401', async () => {
    await must(api.put('/project/er-a'));
    await must(api.put('/project/er-b'));
    const eve = await makeUser(api, 'er-eve', 'er-eve-pw', ['er-a']);
    const engine = ts.world.runtime.engine as { bounds: typeof ts.world.runtime.engine.bounds };
    const bounds = engine.bounds.bind(engine);
    /** The next read of the store's bounds (a resume's) waits for `meanwhile` first. */
    const during = (meanwhile: () => Promise<unknown>) => {
      engine.bounds = async () => {
        engine.bounds = bounds;
        await meanwhile();
        return bounds();
      };
    };
    try {
      // The admin removes eve from er-a while her resuming stream waits for the store's bounds.
      during(() => must(api.post('/auth/basic/user/er-eve/remove_project', { project: 'er-a' })));
      const s = open(`?after=${(await bounds()).last}`, eve);
      expect(await s.answered()).to.equal(200);
      await s.until(() => s.comments.includes('live'));
      expect((await must(api.get('/auth/basic/user/er-eve'))).body.projects).to.deep.equal({});
      // A change of er-a after eve left it; then eve joins er-b, which ends her streams once
      // what came before has gone out (so anything of er-a she could see would be there).
      await must(api.put('/network/er-after-removal', { owner: 'er-a', access: 'er-a', net_id: '' }));
      await must(api.post('/auth/basic/user/er-eve/add_project', { project: 'er-b' }));
      await s.ended;
      expect(s.events.map((e) => e.data.name), 'events of er-a eve received after she left it').to.not.include('er-after-removal');

      during(() => must(api.del('/auth/basic/user/er-eve')));
      const gone = open(`?after=${(await bounds()).last}`, eve);
      expect(await gone.answered(), 'eve deleted while her stream was being opened').to.equal(401);

      // A new password (the user made again, in the same project): the old one opens nothing.
      const fay = await makeUser(api, 'er-fay', 'er-fay-pw', ['er-b']);
      expect((await api.with(fay).get('/project/er-b/nodes')).status).to.equal(200);
      during(async () => {
        await must(api.del('/auth/basic/user/er-fay'));
        await makeUser(api, 'er-fay', 'er-fay-new-pw', ['er-b']);
      });
      const old = open(`?after=${(await bounds()).last}`, fay);
      expect(await old.answered(), 'fay\'s old password, changed while her stream was being opened').to.equal(401);
    } finally {
      engine.bounds = bounds;
    }
  });

  it('never replays to the members of a project the events of an earlier, deleted project of the same name', async () => {
    const { last: before } = await ts.world.runtime.engine.bounds();
    await sleep(5);
    const t0 = new Date().toISOString();
    // The first project "reuse": a node, a private network, a member; then all of it gone.
    await must(api.put('/project/reuse'));
    const old = await makeUser(api, 'reuse-old', 'reuse-old-pw', ['reuse']);
    await must(api.put('/node/reuse-n1', { obm: obm() }));
    await must(api.with(old).post('/project/reuse/connect_node', { node: 'reuse-n1' }));
    await must(api.put('/node/reuse-n1/metadata/first-tenant', { value: 'private' }));
    await must(api.with(old).put('/network/reuse-first-net', { owner: 'reuse', access: 'reuse', net_id: '' }));
    await must(api.with(old).del('/network/reuse-first-net'));
    await must(api.with(old).post('/project/reuse/detach_node', { node: 'reuse-n1' }));
    await must(api.del('/project/reuse'));
    // Another project under the name, another member.
    await must(api.put('/project/reuse'));
    const created = (await ts.world.runtime.engine.bounds()).last;
    const fresh = await makeUser(api, 'reuse-new', 'reuse-new-pw', ['reuse']);
    await must(api.put('/project/reuse-end'));
    for (const query of [`?after=${before}`, `?since=${t0}`]) {
      const s = open(query, fresh);
      expect(await s.answered(), query).to.equal(200);
      await s.until(() => s.comments.includes('live'));
      const text = JSON.stringify(s.events);
      expect(text, query).to.not.include('reuse-first-net');
      expect(text, query).to.not.include('first-tenant');
      expect(s.events.filter((e) => Number(e.id) < created).map((e) => `${e.id} ${e.event} ${e.data.name}`), query).to.deep.equal([]);
      // The new project's own events are there: its creation, its member joining.
      expect(s.events.map((e) => e.event), query).to.include.members(['project.created', 'project.user_added']);
      s.close();
    }
    // The first project's member, gone with it, resumes from the same cursor: nothing of either.
    const gone = open(`?after=${before}`, old);
    expect(await gone.answered()).to.equal(200);
    await gone.until(() => gone.comments.includes('live'));
    expect(gone.events.map((e) => `${e.id} ${e.event} ${e.data.name}`)).to.deep.equal([]);
    gone.close();
  });

  it('refuses bad input with 400, and callers without credentials with 401', async () => {
    for (const q of ['?after=abc', '?after=-1', '?since=yesterday', '?since=2026-02-30T00:00:00Z', '?since=2025-02-29', '?after=1&since=2026-01-01T00:00:00Z', '?color=red', '?after=', `?kind=${'x'.repeat(5000)}`]) {
      const r = await api.get(`/events${q}`);
      expect(r.status, q).to.equal(400);
      expect(r.body.type, q).to.equal('BadArgumentError');
    }
    // A filter that names no event type or kind would match nothing, silently, forever (a typo).
    for (const q of ['?type=node.regstered', '?type=nodes.*', '?type=node.registered,bogus', '?type=*', '?kind=nodes', '?kind=node&kind=bogus']) {
      const r = await api.get(`/events${q}`);
      expect(r.status, q).to.equal(400);
      expect(r.body.type, q).to.equal('BadArgumentError');
    }
    // A start in the future: the stream would send the events committed before it.
    const future = new Date(Date.now() + 3_600_000).toISOString();
    const f = await api.get(`/events?since=${future}`);
    expect(f.status, 'since in the future').to.equal(400);
    expect(f.body.type).to.equal('BadArgumentError');
    expect(f.body.msg).to.match(/future/);
    const h = open('', ADMIN, 'not-an-id');
    expect(await h.answered()).to.equal(400);
    const r = await api.call('GET', '/events', { raw: '{"a":1}' });
    expect(r.status).to.equal(400);
    expect((await api.with(null).get('/events')).status).to.equal(401);
    expect((await api.with({ user: 'admin', password: 'wrong' }).get('/events')).status).to.equal(401);
    // Under /v0 too.
    const v0 = new SseStream(`${ts.url}/v0/events`, { as: ADMIN });
    expect(await v0.answered()).to.equal(200);
    v0.close();
  });
});

const BOUND = 512 * 1024;

describe('GET /events: heartbeat and a consumer that does not read', function () {
  this.timeout(120_000);
  let ts: TestServer;

  before(async () => {
    ts = await startTestServer({ eventsHeartbeatMs: 200, eventsBufferBytes: BOUND });
  });
  after(() => stopTestServer(ts));

  it('sends a comment heartbeat while nothing happens', async () => {
    const s = new SseStream(`${ts.url}/events`, { as: ADMIN });
    await s.until(() => s.comments.filter((c) => c === 'heartbeat').length >= 2, 5000);
    s.close();
  });

  it('drops a consumer that stops reading at the bound, while writers and other consumers go on; memory stays bounded', async () => {
    const api = ts.api;
    const reader = new SseStream(`${ts.url}/events?kind=node`, { as: ADMIN, light: true });
    expect(await reader.answered()).to.equal(200);
    const dropped = () => ts.metrics.text().then((t) => Number(/hilt_event_streams_dropped_total\{reason="buffer"\} (\d+)/.exec(t)?.[1] ?? 0));
    const before = await dropped();
    // About 16 MB of events (each ~4 KB of metadata) on 20 nodes, whose state stays as large:
    // far past what the stuck consumer's socket buffers and the bound hold together.
    const big = (i: number) => `${i}`.padEnd(4000, 'x');
    const n = 4000;
    for (let j = 0; j < 20; j++) await must(api.put(`/node/bp${j}`, { obm: obm() }));
    // A first round warms up what any run of writes allocates once (compiled code, caches, the ring of recent events).
    for (let i = 0; i < 1000; i += 20) await Promise.all(Array.from({ length: 20 }, (_, j) => must(api.put(`/node/bp${j}/metadata/blob`, { value: big(i + j) }))));
    await reader.count(1020, 30_000);
    reader.events.splice(0);
    const stuck = new SseStream(`${ts.url}/events?kind=node`, { as: ADMIN, light: true });
    expect(await stuck.answered()).to.equal(200);
    stuck.pause();
    gc();
    const heap0 = process.memoryUsage().heapUsed;
    let held = 0;
    for (let i = 0; i < n; i += 20) {
      await Promise.all(Array.from({ length: 20 }, (_, j) => must(api.put(`/node/bp${j}/metadata/blob`, { value: big(i + j) }))));
      held = Math.max(held, ts.app.hilt.events.bufferedBytes());
    }
    await reader.count(n, 60_000).catch(async (err) => {
      throw new Error(`${err.message}; reader ended ${reader.endedAt}, stuck ended ${stuck.endedAt}, dropped ${await dropped()}`);
    });
    expect(reader.endedAt, 'the reading consumer is not dropped').to.equal(0);
    expect(ts.app.hilt.events.size, 'the stuck consumer was dropped').to.equal(1);
    // Reading again, it finds what its socket's buffers held, then the end.
    stuck.resume();
    await stuck.ended;
    expect(await dropped()).to.equal(before + 1);
    expect(stuck.events.length, 'the stuck consumer got only what its buffers held').to.be.below(n);
    // What the service held for its streams never passed the bound by more than one commit's frames.
    expect(held, `held ${held} bytes`).to.be.below(2 * BOUND + 20 * 5000);
    // Nothing of the 16 MB it did not read stays: the heap grew by far less (the newest events
    // kept for resumes are 2 MiB at most).
    gc();
    const grown = process.memoryUsage().heapUsed - heap0;
    expect(grown, `heap grew ${grown} bytes`).to.be.below(6 * 1024 * 1024);
    // It resumes from its last id without loss or repeat.
    const last = stuck.events.at(-1)?.id ?? '0';
    const again = new SseStream(`${ts.url}/events?kind=node&after=${last}`, { as: ADMIN, light: true });
    await again.until(() => (again.events.at(-1)?.id ?? '') === reader.events.at(-1)!.id, 60_000);
    expect([...stuck.events, ...again.events].map((e) => e.id)).to.deep.equal(reader.events.map((e) => e.id));
    reader.close();
    again.close();
  });
});

describe('GET /events after a restore from a backup (LMDB)', function () {
  this.timeout(60_000);

  it('answers 410 to an id the live store gave after the backup, and streams the restored store\'s own events', async () => {
    const { join } = await import('node:path');
    const live = await startTestServer({ storage: 'lmdb' });
    await must(live.api.put('/node/before-backup', { obm: obm() }));
    const copy = join(scratchDir('hilt-restore-'), 'copy');
    await must(live.api.post('/admin/backup', { path: copy }));
    await must(live.api.put('/node/lost', { obm: obm() }));
    const s = new SseStream(`${live.url}/events?after=0&kind=node`, { as: ADMIN });
    await s.count(2);
    s.close();
    const lostId = s.events.find((e) => e.data.name === 'lost')!.id;
    // A restore brings the key of the credentials at rest along (backups never hold it: docs/identity.md).
    const { copyFileSync, existsSync } = await import('node:fs');
    if (existsSync(join(live.dataDir, 'secret.key'))) copyFileSync(join(live.dataDir, 'secret.key'), join(copy, 'secret.key'));
    const restored = await startTestServer({ storage: 'lmdb' }, {}, copy);
    const gone = new SseStream(`${restored.url}/events`, { as: ADMIN, lastEventId: lostId });
    expect(await gone.answered()).to.equal(410);
    await gone.ended;
    const oldest = JSON.parse(gone.body).oldest as string;
    expect(Number(oldest)).to.be.above(Number(lostId));
    // From the oldest kept on: the restored store's own new events.
    const fresh = new SseStream(`${restored.url}/events?kind=node&after=${Number(oldest) - 1}`, { as: ADMIN });
    await must(restored.api.put('/node/after-restore', { obm: obm() }));
    await fresh.count(1);
    expect(fresh.events.map((e) => e.data.name)).to.deep.equal(['after-restore']);
    fresh.close();
    await stopTestServer(restored);
    await stopTestServer(live);
  });

  it('answers 410 to an id the first restore of a backup gave, once a second restore of the same backup wrote past it', async () => {
    const { cpSync, copyFileSync, existsSync, rmSync } = await import('node:fs');
    const { join } = await import('node:path');
    const live = await startTestServer({ storage: 'lmdb' });
    await must(live.api.put('/node/before-backup', { obm: obm() }));
    const dir = scratchDir('hilt-restore-');
    const backup = join(dir, 'backup');
    await must(live.api.post('/admin/backup', { path: backup }));
    if (existsSync(join(live.dataDir, 'secret.key'))) copyFileSync(join(live.dataDir, 'secret.key'), join(backup, 'secret.key'));
    await stopTestServer(live);
    // Each restore a copy of the untouched backup (docs/operations.md).
    const restore = (name: string) => {
      cpSync(backup, join(dir, name), { recursive: true });
      return startTestServer({ storage: 'lmdb' }, {}, join(dir, name));
    };
    const first = await restore('first');
    const s = new SseStream(`${first.url}/events?kind=node`, { as: ADMIN });
    await s.answered();
    await must(first.api.put('/node/first-a', { obm: obm() }));
    await must(first.api.put('/node/first-b', { obm: obm() }));
    await s.count(2);
    s.close();
    const seen = s.events.at(-1)!.id;
    await stopTestServer(first);
    const second = await restore('second');
    for (const n of ['second-a', 'second-b', 'second-c']) await must(second.api.put(`/node/${n}`, { obm: obm() }));
    // The first restore's consumer comes back: told its id is gone, not given the rest after a reused id.
    const back = new SseStream(`${second.url}/events?kind=node`, { as: ADMIN, lastEventId: seen });
    expect(await back.answered(), back.events.map((e) => `${e.id} ${e.data.name}`).join(', ')).to.equal(410);
    await back.ended;
    const oldest = Number(JSON.parse(back.body).oldest);
    expect(oldest).to.be.above(Number(seen));
    const all = new SseStream(`${second.url}/events?kind=node&after=${oldest - 1}`, { as: ADMIN });
    await all.count(3);
    expect(all.events.map((e) => e.data.name)).to.deep.equal(['second-a', 'second-b', 'second-c']);
    all.close();
    await stopTestServer(second);
    rmSync(dir, { recursive: true, force: true });
  });
});
