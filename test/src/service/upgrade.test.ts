/**
 * Upgrade guard: a data folder written by an earlier version of hilt (test/fixtures/upgrade-v1,
 * made by its make-fixture.mjs; the commit is named in its README.md) must be served exactly
 * as that version served it, its pending network operations must finish, and new ones must
 * work on it. The expected answers are that version's own, recorded just before it was
 * killed with operations pending.
 */
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isDeepStrictEqual, promisify } from 'node:util';
import { Client, Creds, Res, TestServer, startTestServer, stopTestServer, must, finished } from '../../helpers/server';
import { MEMBERS_ERROR } from '../../../src/routes/operation-access';

const FIXTURE = join(__dirname, '..', '..', '..', '..', 'test', 'fixtures', 'upgrade-v1');

interface Entry { as: string; method: string; path: string; status: number; body: unknown; ignore?: string[] }
interface PortVlans { native: number | null; tagged: number[] }
interface Pending {
  id: string; node: string; nic: string; switch: string; port: string;
  kind: 'connect' | 'detach'; network: string; channel: string; vlan: number;
  portBefore: PortVlans; portAfter: PortVlans;
}
interface Scenario {
  users: Record<string, Creds | null>;
  statusIds: { id: string; what: string; pending?: boolean }[];
  pending: Pending[];
  networkIds: Record<string, number>;
  nextDynamicVlan: number;
}

const expected = JSON.parse(readFileSync(join(FIXTURE, 'expected.json'), 'utf8')) as Entry[];
const scenario = JSON.parse(readFileSync(join(FIXTURE, 'scenario.json'), 'utf8')) as Scenario;

/**
 * Order that carries no meaning is taken out before comparing: lists of names are sets
 * (docs/api-conventions.md §1: the order of lists is not significant: /nodes/*, /projects, /switches, a switch's
 * ports, project lists, channels, access lists, hnics, extensions), and show_node's nics are
 * keyed by label. A storage layout that rebuilds its maps in another order must not fail here.
 * Lists of objects keep their order: /node/<n>/networking_actions is newest first by contract.
 */
function canonical(v: unknown): unknown {
  if (Array.isArray(v)) {
    const items = v.map(canonical);
    if (items.every((x) => typeof x === 'string')) return [...(items as string[])].sort();
    const isNic = (x: unknown) => !!x && typeof x === 'object' && typeof (x as { label?: unknown }).label === 'string' && 'macaddr' in x;
    if (items.length && items.every(isNic)) {
      return [...(items as { label: string }[])].sort((a, b) => (a.label < b.label ? -1 : a.label > b.label ? 1 : 0));
    }
    return items;
  }
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, canonical(x)]));
  return v;
}

/**
 * Keys answers gained after v1 recorded the fixture; the contract allows extra keys. They are
 * taken out of today's answer before comparing (their own tests check them), and must be there.
 */
const ADDED_SINCE_V1: { path: RegExp; key: string }[] = [
  // show_network's connected-nodes (docs/api-conventions.md §7)
  { path: /^(\/v0)?\/network\/[^/]+$/, key: 'connected-nodes' },
];

/** Calls a later release added where v1 answered "no such call": their own tests check them. */
const CALLS_ADDED_SINCE_V1: { method: string; path: RegExp }[] = [
  // show_user (docs/identity.md)
  { method: 'GET', path: /^(\/v0)?\/auth\/basic\/user\/[^/]+$/ },
];

function withoutAdded(e: Entry, r: Res): { body: unknown; missing: string[] } {
  const added = ADDED_SINCE_V1.filter((a) => e.method === 'GET' && r.status === 200 && a.path.test(e.path));
  if (!added.length) return { body: r.body, missing: [] };
  const body = { ...(r.body as Record<string, unknown>) };
  const missing = added.filter((a) => !(a.key in body)).map((a) => a.key);
  for (const a of added) delete body[a.key];
  return { body, missing };
}

/**
 * What a later release changed on purpose in v1's answers: a failed operation's reason reads,
 * to anyone but an admin, as a fixed text (docs/api-conventions.md §8: the switch's own words
 * name the wiring); v1 gave it whole. Applied to v1's recorded answer before comparing.
 */
function asNowForMembers(e: Entry, admins: ReadonlySet<string>): unknown {
  if (admins.has(e.as) || !/\/networking_actions?(\/|$)/.test(e.path)) return e.body;
  const shown = (a: unknown) => (a && typeof a === 'object' && 'error' in a ? { ...a, error: MEMBERS_ERROR } : a);
  return Array.isArray(e.body) ? e.body.map(shown) : shown(e.body);
}

/** Fields listed in `ignore` depend on the run (a mock headnode's VNC port): only their kind must match. */
function comparable(e: Entry, body: unknown): unknown {
  if (!e.ignore || !body || typeof body !== 'object' || Array.isArray(body)) return canonical(body);
  const c: Record<string, unknown> = { ...(body as Record<string, unknown>) };
  for (const f of e.ignore) c[f] = c[f] === null ? null : typeof c[f];
  return canonical(c);
}


/** Every recorded read, a few at a time (they are independent reads). */
async function replay(api: Client): Promise<Res[]> {
  const out: Res[] = new Array(expected.length);
  let next = 0;
  await Promise.all(Array.from({ length: 8 }, async () => {
    while (next < expected.length) {
      const i = next++;
      const e = expected[i];
      out[i] = await api.call(e.method, e.path, { as: scenario.users[e.as] });
    }
  }));
  return out;
}

describe('upgrade: a data folder written by hilt v1 (test/fixtures/upgrade-v1)', function () {
  this.timeout(30_000);
  let dir: string;
  let ts: TestServer | undefined;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'hilt-upgrade-'));
    await promisify(execFile)('tar', ['-xzf', join(FIXTURE, 'data.tar.gz'), '-C', dir]);
  });
  afterEach(async () => {
    if (ts) await stopTestServer(ts, false);
    ts = undefined;
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('answers every recorded read as v1 did, with its pending operations still PENDING', async () => {
    // The switch takes 600 s per change, so nothing pending can finish during this test.
    ts = await startTestServer({ mockSwitchDelayMs: 600_000, headnodeDriver: 'mock' }, {}, dir);
    await ts.headnodesRecovered;
    const answers = await replay(ts.api);
    const users = [...new Set(expected.map((e) => e.as))].filter((u) => scenario.users[u]);
    const admins = new Set<string>();
    // (A user the scenario deleted is no admin.)
    for (const u of users) if ((await ts.api.get(`/auth/basic/user/${scenario.users[u]!.user}`)).body?.is_admin === true) admins.add(u);
    const wrong: string[] = [];
    expected.forEach((e, i) => {
      const r = answers[i];
      // A driver added by a later release is a new extension, not a change of the data: v1's
      // extensions must all still be there.
      if (e.path.endsWith('/active_extensions') && r.status === e.status && Array.isArray(r.body) && Array.isArray(e.body)) {
        if (!(e.body as string[]).every((x) => (r.body as string[]).includes(x))) {
          wrong.push(`${e.as} ${e.method} ${e.path}: got ${r.text}\n  v1's extensions were ${JSON.stringify(e.body)}`);
        }
        return;
      }
      if (e.status === 404 && /^no such call/.test((e.body as { msg?: string })?.msg ?? '') && CALLS_ADDED_SINCE_V1.some((c) => c.method === e.method && c.path.test(e.path))) return;
      const { body, missing } = withoutAdded(e, r);
      if (missing.length) wrong.push(`${e.as} ${e.method} ${e.path}: lacks ${missing.join(', ')}`);
      else if (r.status !== e.status || !isDeepStrictEqual(comparable(e, body), comparable(e, asNowForMembers(e, admins)))) {
        wrong.push(`${e.as} ${e.method} ${e.path}: got ${r.status} ${r.text}\n  v1 gave ${e.status} ${JSON.stringify(e.body)}`);
      }
    });
    expect(wrong.length, `answers that differ from v1's (${wrong.length} of ${expected.length}):\n${wrong.slice(0, 10).join('\n')}`).to.equal(0);
    // Beyond the contract, a node's nics and a switch's ports also keep v1's order (registration order).
    const ordered = /^(\/v0)?\/(node|switch)\/[^/]+$/;
    const reordered = expected.filter((e, i) => ordered.test(e.path) && e.status === 200 && !e.ignore
      && !isDeepStrictEqual(answers[i].body, e.body)).map((e) => `${e.as} ${e.path}`);
    expect(reordered, 'show_node / show_switch answers in another order than v1').to.deep.equal([]);
    // The fixture itself covers what it should: every status id, and some of them pending.
    const paths = new Set(expected.map((e) => e.path));
    for (const s of scenario.statusIds) expect(paths.has(`/networking_action/${s.id}`), s.what).to.equal(true);
    expect(scenario.pending).to.have.length(3);

    for (const p of scenario.pending) {
      expect((await must(ts.api.get(`/networking_action/${p.id}`))).body.status, `${p.node}/${p.nic}`).to.equal('PENDING');
      // Nothing of it reached the switch either.
      expect(ts.mockSwitch.port(p.switch, p.port), `${p.switch} ${p.port}`).to.deep.equal(p.portBefore);
    }
  });

  it('after a restart finishes the pending operations and takes new ones on the v1 data', async () => {
    ts = await startTestServer({ headnodeDriver: 'mock' }, {}, dir);
    await ts.headnodesRecovered;
    const api = ts.api;

    for (const p of scenario.pending) {
      const what = `${p.kind} ${p.network} on ${p.node}/${p.nic}`;
      expect(await finished(api, p.id), what).to.include({ status: 'DONE' });
      const nic = (await must(api.get(`/node/${p.node}`))).body.nics.find((n: { label: string }) => n.label === p.nic);
      const attachments = (await must(api.get(`/network/${p.network}/attachments`))).body;
      if (p.kind === 'connect') {
        expect(nic.networks[p.channel], what).to.equal(p.network);
        expect(attachments[p.node], what).to.deep.include({ nic: p.nic, channel: p.channel });
      } else {
        expect(nic.networks, what).to.not.have.property(p.channel);
        expect(attachments[p.node]?.nic, what).to.not.equal(p.nic);
      }
      expect(ts.mockSwitch.port(p.switch, p.port), what).to.deep.equal(p.portAfter);
    }

    // n05's only operation ended ERROR (its port refused every change then): the nic works now.
    const blue = scenario.networkIds['blue-net'];
    const c = (await must(api.post('/node/n05/nic/eth0/connect_network', { network: 'blue-net' }), 202)).body.status_id as string;
    expect(await finished(api, c)).to.include({ status: 'DONE', node: 'n05', nic: 'eth0', new_network: 'blue-net' });
    expect((await must(api.get('/node/n05'))).body.nics[0].networks).to.deep.equal({ 'vlan/native': 'blue-net' });
    expect(ts.mockSwitch.port('sw-b', 'gi1/0/3')).to.deep.equal({ native: blue, tagged: [] });
    const d = (await must(api.post('/node/n05/nic/eth0/detach_network', { network: 'blue-net' }), 202)).body.status_id as string;
    expect(await finished(api, d)).to.include({ status: 'DONE', new_network: null });
    expect(ts.mockSwitch.port('sw-b', 'gi1/0/3')).to.deep.equal({ native: null, tagged: [] });

    // n02 has 44 operations, most of them only in its journal: a new one gets a new status id
    // and goes on top of the same history.
    const before = expected.find((e) => e.as === 'admin' && e.path === '/node/n02/networking_actions')!.body as { status_id: string }[];
    const n = (await must(api.post('/node/n02/nic/eth0/detach_network', { network: 'admin-in' }), 202)).body.status_id as string;
    expect(scenario.statusIds.map((s) => s.id)).to.not.include(n);
    expect(await finished(api, n)).to.include({ status: 'DONE', node: 'n02', channel: `vlan/${scenario.networkIds['admin-in']}` });
    const after = (await must(api.get('/node/n02/networking_actions'))).body as { status_id: string }[];
    expect(after.map((a) => a.status_id)).to.deep.equal([n, ...before.map((a) => a.status_id)]);
    expect(after.slice(1)).to.deep.equal(before);
    expect(ts.mockSwitch.port('sw-a', 'gi1/0/3')).to.deep.equal({ native: scenario.networkIds['red-net2'], tagged: [] });

    // The dynamic VLAN pool is derived from v1's networks: the lowest free id comes next.
    await must(api.put('/network/after-upgrade', { owner: 'green', access: 'green', net_id: '' }));
    expect((await must(api.get('/networks'))).body['after-upgrade']).to.deep.equal({ network_id: String(scenario.nextDynamicVlan), projects: ['green'] });
  });
});
