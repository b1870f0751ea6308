/**
 * Property-based fuzzing of every route (issue 11 item 8), with fast-check, against the service
 * as a child process (LMDB in a temporary folder):
 *
 * - hostile requests over HTTP: every route, random and hostile names in every slot (huge,
 *   unicode, control characters, lone surrogates, `..`, `/`, `%2F`, `%`), bodies (valid shapes
 *   with wrong types, missing and extra keys, duplicate keys, truncated and malformed JSON, random
 *   bytes, JSON that is not an object, over 1 MiB), query strings, headers, methods and content
 *   types, from callers who may not make the call or with at least one defect the service must
 *   refuse. Each answer must be a 4xx with the JSON error body (two strings, `type` and `msg`,
 *   a bounded message) within a second, the process alive, and the state read back through the
 *   API unchanged;
 * - malformed HTTP on a raw socket (bad request lines, headers, lengths): a 4xx with the JSON
 *   error body, or the connection closed when the request never completed.
 *
 * The seed is printed; HILT_FUZZ_SEED=<seed> runs the same inputs again (fast-check also prints
 * the path of a failing run). CI runs HILT_FUZZ_RUNS (default 2,000, about 20 s) HTTP inputs and a
 * fifth as many raw ones; `npm run fuzz` runs 20,000 (HILT_SOAK=1).
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:net';
import { Agent, request } from 'node:http';
import { startServerProcess, ServerProcess } from '../helpers/process';
import { Client, must, basic, obm, mockSwitch, MOCK_OBM, MOCK_SWITCH } from '../helpers/server';
import { record } from '../helpers/secrets';

const SOAK = process.env.HILT_SOAK === '1';
const RUNS = Number(process.env.HILT_FUZZ_RUNS ?? (SOAK ? 20_000 : 2_000));
const SEED = Number(process.env.HILT_FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));

const ADMIN = { user: 'fuzzroot', password: 'fuzz-root-pw' };
const MEMBER = { user: 'u1', password: 'u1-fuzz-pw' };
const OUTSIDER = { user: 'u2', password: 'u2-fuzz-pw' };

type Slot = 'project' | 'node' | 'nic' | 'switch' | 'port' | 'network' | 'user' | 'headnode' | 'hnic' | 'label' | 'status' | 'kind' | 'token';
/** A body key and the kind of value it takes. */
type KeyKind = Slot | 'string' | 'bool' | 'obm' | 'metadata' | 'value' | 'switchType' | 'access' | 'netId' | 'bootdev' | 'channel' | 'image' | 'password' | 'time' | 'limit' | 'seconds' | 'role';
/** anyUser: a change every authenticated user may make (so an outsider without a defect is not refused) */
interface Route { method: string; path: string; body?: Record<string, KeyKind>; required?: string[]; anyUser?: boolean }

/** Every route of the API (a test below checks the list against the server's own route table). */
const ROUTES: Route[] = [
  { method: 'PUT', path: '/project/{project}' },
  { method: 'DELETE', path: '/project/{project}' },
  { method: 'GET', path: '/projects' },
  { method: 'POST', path: '/project/{project}/connect_node', body: { node: 'node' } },
  { method: 'POST', path: '/project/{project}/detach_node', body: { node: 'node' } },
  { method: 'GET', path: '/project/{project}/nodes' },
  { method: 'GET', path: '/project/{project}/networks' },
  { method: 'GET', path: '/project/{project}/headnodes' },
  { method: 'PUT', path: '/node/{node}', body: { obm: 'obm', metadata: 'metadata' }, required: ['obm'] },
  { method: 'DELETE', path: '/node/{node}' },
  { method: 'GET', path: '/node/{node}' },
  { method: 'GET', path: '/nodes/all' },
  { method: 'GET', path: '/nodes/free' },
  { method: 'PUT', path: '/node/{node}/nic/{nic}', body: { macaddr: 'string' } },
  { method: 'DELETE', path: '/node/{node}/nic/{nic}' },
  { method: 'PUT', path: '/node/{node}/metadata/{label}', body: { value: 'value' } },
  { method: 'DELETE', path: '/node/{node}/metadata/{label}' },
  { method: 'POST', path: '/node/{node}/power_cycle', body: { force: 'bool' }, required: [] },
  { method: 'POST', path: '/node/{node}/power_off' },
  { method: 'POST', path: '/node/{node}/power_on' },
  { method: 'GET', path: '/node/{node}/power_status' },
  { method: 'PUT', path: '/node/{node}/boot_device', body: { bootdev: 'bootdev' } },
  { method: 'PUT', path: '/node/{node}/console' },
  { method: 'GET', path: '/node/{node}/console' },
  { method: 'DELETE', path: '/node/{node}/console' },
  { method: 'GET', path: '/node/{node}/console/stream' },
  { method: 'POST', path: '/node/{node}/nic/{nic}/connect_network', body: { network: 'network', channel: 'channel' }, required: ['network'] },
  { method: 'POST', path: '/node/{node}/nic/{nic}/detach_network', body: { network: 'network' } },
  { method: 'GET', path: '/node/{node}/networking_actions' },
  { method: 'GET', path: '/networking_action/{status}' },
  { method: 'PUT', path: '/switch/{switch}', body: { type: 'switchType', hostname: 'string', username: 'string', password: 'password' } },
  { method: 'DELETE', path: '/switch/{switch}' },
  { method: 'GET', path: '/switches' },
  { method: 'GET', path: '/switch/{switch}' },
  { method: 'PUT', path: '/switch/{switch}/port/{port}' },
  { method: 'DELETE', path: '/switch/{switch}/port/{port}' },
  { method: 'GET', path: '/switch/{switch}/port/{port}' },
  { method: 'POST', path: '/switch/{switch}/port/{port}/connect_nic', body: { node: 'node', nic: 'nic' } },
  { method: 'POST', path: '/switch/{switch}/port/{port}/detach_nic' },
  { method: 'POST', path: '/switch/{switch}/port/{port}/revert' },
  { method: 'PUT', path: '/network/{network}', body: { owner: 'project', access: 'access', net_id: 'netId' } },
  { method: 'DELETE', path: '/network/{network}' },
  { method: 'GET', path: '/network/{network}' },
  { method: 'GET', path: '/networks' },
  { method: 'GET', path: '/network/{network}/attachments' },
  { method: 'PUT', path: '/network/{network}/access/{project}' },
  { method: 'DELETE', path: '/network/{network}/access/{project}' },
  { method: 'PUT', path: '/auth/basic/user/{user}', body: { password: 'password', 'is-admin': 'bool', is_admin: 'bool', role: 'role' }, required: ['password'] },
  { method: 'DELETE', path: '/auth/basic/user/{user}' },
  { method: 'POST', path: '/auth/basic/user/{user}/add_project', body: { project: 'project', role: 'role' }, required: ['project'] },
  { method: 'POST', path: '/auth/basic/user/{user}/remove_project', body: { project: 'project' } },
  { method: 'PATCH', path: '/auth/basic/user/{user}', body: { is_admin: 'bool', role: 'role' }, required: [] },
  { method: 'PUT', path: '/headnode/{headnode}', body: { project: 'project', base_img: 'image' } },
  { method: 'DELETE', path: '/headnode/{headnode}' },
  { method: 'GET', path: '/headnode/{headnode}' },
  { method: 'POST', path: '/headnode/{headnode}/start' },
  { method: 'POST', path: '/headnode/{headnode}/stop' },
  { method: 'PUT', path: '/headnode/{headnode}/hnic/{hnic}' },
  { method: 'DELETE', path: '/headnode/{headnode}/hnic/{hnic}' },
  { method: 'POST', path: '/headnode/{headnode}/hnic/{hnic}/connect_network', body: { network: 'network' } },
  { method: 'POST', path: '/headnode/{headnode}/hnic/{hnic}/detach_network' },
  { method: 'GET', path: '/headnode_images' },
  { method: 'GET', path: '/active_extensions' },
  { method: 'GET', path: '/admin/actors' },
  { method: 'GET', path: '/admin/actors/{kind}/{node}' },
  { method: 'GET', path: '/admin/actors/{kind}/{node}/journal' },
  { method: 'POST', path: '/admin/node/{node}/nic/{nic}/reapply' },
  { method: 'POST', path: '/admin/node/{node}/nic/{nic}/force_detach', body: { network: 'network' } },
  { method: 'DELETE', path: '/switch/{switch}/host_key' },
  { method: 'GET', path: '/admin/switch/{switch}/drift' },
  { method: 'POST', path: '/admin/switch/{switch}/repair' },
  { method: 'POST', path: '/admin/switch/{switch}/port/{port}/clear_doubt' },
  { method: 'GET', path: '/admin/switch/{switch}/wiring' },
  { method: 'GET', path: '/admin/wiring' },
  { method: 'POST', path: '/admin/switch/{switch}/wiring/propose' },
  { method: 'GET', path: '/admin/audit' },
  { method: 'POST', path: '/admin/backup', body: { path: 'string' } },
  { method: 'GET', path: '/metrics' },
  { method: 'GET', path: '/events' },
  { method: 'POST', path: '/admin/webhooks', body: { url: 'string', secret: 'password', description: 'string' }, required: ['url', 'secret'] },
  { method: 'GET', path: '/admin/webhooks' },
  { method: 'GET', path: '/admin/webhooks/{label}' },
  { method: 'DELETE', path: '/admin/webhooks/{label}' },
  { method: 'POST', path: '/admin/webhooks/{label}/resume' },
  { method: 'PUT', path: '/node/{node}/lease', body: { expires_at: 'time' } },
  { method: 'GET', path: '/node/{node}/lease' },
  { method: 'DELETE', path: '/node/{node}/lease' },
  { method: 'GET', path: '/project/{project}/leases' },
  { method: 'PUT', path: '/project/{project}/quota', body: { nodes: 'limit', networks: 'limit', headnodes: 'limit' }, required: [] },
  { method: 'GET', path: '/project/{project}/quota' },
  { method: 'GET', path: '/admin/maintenance' },
  { method: 'GET', path: '/admin/nodes/attention' },
  { method: 'GET', path: '/networking_actions' },
  { method: 'GET', path: '/nodes/all/details' },
  { method: 'GET', path: '/nodes/free/details' },
  { method: 'GET', path: '/switches/details' },
  { method: 'GET', path: '/admin/inventory' },
  { method: 'POST', path: '/auth/tokens', body: { expires_in: 'seconds', project: 'project', read_only: 'bool', description: 'string' }, required: [], anyUser: true },
  { method: 'GET', path: '/auth/tokens' },
  { method: 'DELETE', path: '/auth/tokens/{token}' },
  { method: 'GET', path: '/auth/basic/user/{user}' },
  { method: 'POST', path: '/admin/secret-key/rotate', body: { key_file: 'string' } },
];

/**
 * Served, but not fuzzed here: the dashboard (a page, its assets, and an API of its own behind a
 * session cookie and a CSRF token, which test/src/routes/ui.test.ts attacks).
 */
const NOT_FUZZED = /^(GET|POST) \/ui(\/|$)/;

/** The fixture's names, per slot: what the fuzzer aims at besides hostile names. */
const FIXTURE: Record<Slot, string[]> = {
  project: ['p1', 'p2'], node: ['n1', 'n2'], nic: ['eth0', 'eth1'], switch: ['s1'], port: ['gi1/0/1', 'gi1/0/2'], network: ['w1', 'pub'],
  user: ['u1', 'u2', ADMIN.user], headnode: ['h1'], hnic: ['e0'], label: ['rack'], status: ['x'], kind: ['node', 'nic', 'project', 'user', 'port'],
  token: ['0123456789abcdef'],
};

/** Names that break the rule (docs/api-conventions.md §1): the service must refuse them. */
const badName: fc.Arbitrary<string> = fc.oneof(
  fc.constant(''),
  fc.integer({ min: 256, max: 4000 }).map((n) => 'x'.repeat(n)),
  fc.integer({ min: 128, max: 200 }).map((n) => 'é'.repeat(n)),
  fc.integer({ min: 64, max: 80 }).map((n) => '😀'.repeat(n)),
  fc.tuple(fc.string({ maxLength: 8 }), fc.integer({ min: 0, max: 0x1f }), fc.string({ maxLength: 8 })).map(([a, c, b]) => `${a}${String.fromCharCode(c)}${b}`),
  fc.tuple(fc.string({ maxLength: 8 }), fc.constantFrom('\u007f', '\u0085', '\u009b', '\ud800', '\udfff')).map(([a, c]) => a + c),
);

/** Any name: the fixture's, odd but valid ones, and rule breakers. */
const anyName = (slot: Slot): fc.Arbitrary<string> => fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...FIXTURE[slot]) },
  { weight: 2, arbitrary: fc.constantFrom('.', '..', '/', '%2F', '%', '%00', '%zz', '__proto__', 'constructor', 'a/b', '../../etc/passwd', '\u202e', 'é', '😀', ' ', 'a b', '?', '#', 'x'.repeat(255)) },
  { weight: 2, arbitrary: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 30 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 30 }) },
  { weight: 2, arbitrary: badName },
);

/** A name as it goes into a path: percent-encoded, or as is (so `/`, `..` and `%` arrive raw). */
function inPath(name: string, raw: boolean): string {
  try {
    return raw ? encodeURI(name).replace(/[?#]/g, encodeURIComponent) : encodeURIComponent(name);
  } catch {
    // a lone surrogate: its WTF-8 bytes, which are not UTF-8
    return [...name].map((c) => (/[\ud800-\udfff]/.test(c) ? '%ED%A0%80' : encodeURIComponent(c))).join('');
  }
}

const jsonOther: fc.Arbitrary<unknown> = fc.oneof(fc.integer(), fc.double({ noNaN: true }), fc.boolean(), fc.constant(null), fc.array(fc.string(), { maxLength: 3 }), fc.dictionary(fc.string({ maxLength: 5 }), fc.string({ maxLength: 5 }), { maxKeys: 3 }));

/** A value of the right JSON type for a body key (valid or hostile content). */
function goodValue(k: KeyKind): fc.Arbitrary<unknown> {
  switch (k) {
    case 'bool': return fc.boolean();
    case 'obm': return fc.oneof(fc.constant(obm('bmc.example')), fc.record({ type: fc.constantFrom(MOCK_OBM, 'x', ''), host: fc.string(), user: fc.string(), password: fc.string() }));
    case 'metadata': return fc.dictionary(anyName('label'), fc.oneof(fc.string(), fc.integer(), fc.boolean()), { maxKeys: 3 });
    case 'value': return fc.oneof(fc.string(), fc.integer(), fc.boolean());
    case 'switchType': return fc.oneof(fc.constant(MOCK_SWITCH), fc.string());
    case 'access': return fc.oneof(fc.constant(''), anyName('project'));
    case 'netId': return fc.oneof(fc.constantFrom('', '1', '4096', '4097', '0', '1e3', '-1', ' 7'), fc.string({ maxLength: 70 }));
    case 'bootdev': return fc.oneof(fc.constantFrom('pxe', 'disk', 'none', 'cdrom'), fc.string());
    case 'channel': return fc.oneof(fc.constantFrom('vlan/native', 'vlan/1000', 'vlan/x'), fc.string({ maxLength: 70 }));
    case 'image': return fc.oneof(fc.constant('base-headnode'), anyName('headnode'));
    case 'string': case 'password': return fc.string({ maxLength: 40 });
    case 'time': return fc.oneof(fc.constantFrom(new Date(Date.now() + 86_400_000).toISOString(), '2000-01-01T00:00:00Z', '2999-01-01T00:00:00Z', 'tomorrow', '2030-13-01T00:00:00Z', ''), fc.string({ maxLength: 70 }));
    case 'limit': return fc.oneof(fc.integer({ min: -2, max: 5 }), fc.constantFrom(null, 1_000_001));
    case 'seconds': return fc.oneof(fc.integer({ min: 1, max: 86_400 }), fc.constantFrom(0, -1, 90 * 86_400 + 1, 2 ** 53));
    case 'role': return fc.oneof(fc.constantFrom('admin', 'auditor', 'user', 'member', 'reader'), fc.string({ maxLength: 10 }));
    default: return anyName(k);
  }
}

/** A value of the wrong JSON type for the key. */
function wrongValue(k: KeyKind): fc.Arbitrary<unknown> {
  if (k === 'bool') return fc.oneof(fc.string(), fc.integer(), fc.constant(null));
  if (k === 'obm' || k === 'metadata') return fc.oneof(fc.string(), fc.integer(), fc.constant(null), fc.array(fc.integer(), { maxLength: 2 }));
  if (k === 'limit') return fc.oneof(fc.string(), fc.boolean(), fc.constantFrom(0.5, -0.25), fc.array(fc.integer(), { maxLength: 2 }));
  if (k === 'value') return fc.oneof(fc.constant(null), fc.array(fc.integer(), { maxLength: 2 }), fc.dictionary(fc.string({ maxLength: 3 }), fc.integer(), { minKeys: 1, maxKeys: 2 }));
  if (k === 'seconds') return fc.oneof(fc.string(), fc.double({ min: 1.1, max: 2, noNaN: true }), fc.constant(null), fc.boolean());
  return jsonOther.filter((v) => typeof v !== 'string');
}

type Caller = 'admin' | 'none' | 'badScheme' | 'garbage' | 'wrongPassword' | 'unknownUser' | 'outsider' | 'member-wrong';
/** A defect that the service must refuse whoever calls (admins are given at least one). */
type Defect = 'badName' | 'extraKey' | 'wrongType' | 'missingKey' | 'duplicateKey' | 'truncated' | 'notJson' | 'notObject' | 'tooLarge' | 'unknownQuery' | 'getBody';

interface FuzzRequest { caller: Caller; defects: Defect[]; method: string; path: string; raw?: string | Buffer; headers: Record<string, string> }

const CONTENT_TYPES = ['application/json', 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/json; charset=latin1', '*/*', 'x'];

function requestArb(): fc.Arbitrary<FuzzRequest> {
  return fc.constantFrom(...ROUTES).chain((route) => {
    const slots = [...route.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1] as Slot);
    const keys = Object.keys(route.body ?? {});
    const required = route.required ?? keys;
    const possible: Defect[] = ['unknownQuery', 'notJson', 'notObject', 'truncated', 'duplicateKey', 'tooLarge'];
    if (slots.length) possible.push('badName');
    if (route.method === 'GET') possible.push('getBody');
    else possible.push('extraKey');
    if (keys.length) possible.push('wrongType');
    if (required.length) possible.push('missingKey');
    const isGet = route.method === 'GET';
    const callers: Caller[] = ['admin', 'admin', 'admin', 'none', 'badScheme', 'garbage', 'wrongPassword', 'unknownUser', 'member-wrong', ...(isGet || route.anyUser ? [] : ['outsider' as Caller])];
    return fc.record({
      caller: fc.constantFrom(...callers),
      defects: fc.subarray(possible, { minLength: 1, maxLength: 2 }),
      noDefect: fc.boolean(),
      names: fc.tuple(...slots.map((s) => anyName(s))),
      rawPath: fc.array(fc.boolean(), { minLength: slots.length, maxLength: slots.length }),
      badSlot: fc.nat(Math.max(0, slots.length - 1)),
      badValue: badName,
      values: fc.tuple(...keys.map((k) => goodValue(route.body![k]))),
      wrongKey: fc.nat(Math.max(0, keys.length - 1)),
      // a wrong value for each key, so the key given one gets one of its own wrong kinds
      wrongs: fc.tuple(...keys.map((k) => wrongValue(route.body![k]))),
      extraKey: fc.oneof(fc.constantFrom('__proto__', 'constructor', 'zz', 'node ', 'is_admin', 'project', 'nic', ''), fc.string({ maxLength: 20 })),
      cut: fc.double({ min: 0, max: 1, noNaN: true }),
      bytes: fc.uint8Array({ minLength: 1, maxLength: 64 }),
      notObject: fc.oneof(fc.constantFrom('null', '[]', '[{}]', '"x"', '1', 'true', '-0', '1e999'), fc.jsonValue().filter((v) => v === null || typeof v !== 'object' || Array.isArray(v)).map((v) => JSON.stringify(v))),
      query: fc.oneof(fc.constantFrom('zz=1', 'project=', 'limit=0', 'limit=999999', '%zz', 'a=1&a=2', 'project[x]=1', '__proto__=1', 'x'.repeat(3000) + '=1'), fc.string({ maxLength: 30 }).map((s) => `${encodeURIComponent(s) || 'q'}=${encodeURIComponent(s)}`)),
      contentType: fc.option(fc.constantFrom(...CONTENT_TYPES), { nil: undefined }),
      extraHeader: fc.option(fc.tuple(fc.constantFrom('x-fuzz', 'accept', 'accept-encoding', 'x-forwarded-for', 'origin', 'cookie'), fc.string({ unit: 'grapheme-ascii', maxLength: 40 }).map((s) => s.replace(/[^\x20-\x7e]/g, ''))), { nil: undefined }),
      wrongMethod: fc.option(fc.constantFrom('GET', 'PUT', 'POST', 'DELETE', 'PATCH', 'OPTIONS'), { nil: undefined }),
      v0: fc.boolean(),
      garbage: fc.string({ unit: 'grapheme-ascii', maxLength: 60 }).map((s) => s.replace(/[^\x20-\x7e]/g, '')),
    }).map((g) => {
      // Admins always carry a defect; other callers may not: they are refused whatever they send.
      const defects: Defect[] = g.caller === 'admin' || !g.noDefect ? g.defects : [];
      let names = [...g.names];
      let raws = [...g.rawPath];
      if (defects.includes('badName')) {
        names[g.badSlot] = g.badValue;
        raws[g.badSlot] = false;
      }
      let path = (g.v0 ? '/v0' : '') + route.path;
      slots.forEach((_s, i) => (path = path.replace(/\{\w+\}/, inPath(names[i], raws[i]))));
      // Unauthenticated callers may also use a method the path does not take.
      const method = g.caller !== 'admin' && g.caller !== 'outsider' && g.wrongMethod ? g.wrongMethod : route.method;
      if (defects.includes('unknownQuery')) path += `?${g.query}`;
      let body: Record<string, unknown> | undefined = route.body ? Object.fromEntries(keys.map((k, i) => [k, g.values[i]])) : undefined;
      if (body && !(route.required ?? keys).length) body = g.noDefect ? body : {};
      if (defects.includes('wrongType') && body) body[keys[g.wrongKey]] = g.wrongs[g.wrongKey];
      if (defects.includes('missingKey') && body) delete body[required[g.wrongKey % required.length]];
      if (defects.includes('extraKey')) {
        body = body ?? {};
        const extra = keys.includes(g.extraKey) || g.extraKey === 'is_admin' && keys.includes('is-admin') ? `${g.extraKey}-x` : g.extraKey;
        Object.defineProperty(body, extra, { value: 1, enumerable: true, writable: true, configurable: true });
      }
      let raw: string | Buffer | undefined = body ? JSON.stringify(body) : undefined;
      if (defects.includes('getBody')) raw = JSON.stringify(body ?? { a: 1 });
      if (defects.includes('duplicateKey')) raw = `{"dup":1,${(raw ?? '{}').slice(1).replace(/^}$/, '"z":0}')}`.replace('{"dup":1,', '{"dup":1,"dup":2,');
      if (defects.includes('truncated')) {
        const text = raw ?? '{"node":"n1"}';
        raw = text.slice(0, Math.max(1, Math.min(text.length - 1, Math.floor(text.length * g.cut))));
      }
      if (defects.includes('notObject')) raw = g.notObject;
      if (defects.includes('notJson')) {
        const b = Buffer.from(g.bytes);
        raw = JSON.stringify(b.toString('latin1')) === b.toString('latin1') ? Buffer.concat([b, Buffer.from('{')]) : b;
        if (/^\s*[\d"tfn[{-]/.test(b.toString('latin1'))) raw = Buffer.concat([Buffer.from([0xff]), b]);
      }
      if (defects.includes('tooLarge')) raw = `{"node":"${'y'.repeat(1024 * 1024 + 16)}"}`;
      const headers: Record<string, string> = {};
      if (g.contentType) headers['content-type'] = g.contentType;
      if (g.extraHeader) headers[g.extraHeader[0]] = g.extraHeader[1];
      const auth = {
        admin: basic(ADMIN), none: undefined, badScheme: `Bearer ${g.garbage}`, garbage: g.garbage, outsider: basic(OUTSIDER),
        wrongPassword: basic({ user: ADMIN.user, password: `${ADMIN.password}x` }), unknownUser: basic({ user: `ghost-${g.garbage.length}`, password: 'x' }),
        'member-wrong': basic({ user: MEMBER.user, password: g.garbage }),
      }[g.caller];
      if (auth !== undefined) headers.authorization = auth;
      return { caller: g.caller, defects, method, path, raw, headers };
    });
  });
}

interface Answer { status: number; text: string; ms: number; headers: Record<string, string | string[] | undefined> }

/**
 * One request. A kept-alive connection that the server closed as idle just as it was reused
 * fails before the request was read (ECONNRESET, EPIPE): that request is sent once more on a new
 * connection, as node's documentation advises.
 */
function send(base: string, agent: Agent, r: FuzzRequest, retry = true): Promise<Answer> {
  const t0 = Date.now();
  return new Promise((resolve, reject) => {
    const headers = r.raw === undefined ? r.headers : { ...r.headers, 'content-length': String(Buffer.byteLength(r.raw)) };
    const req = request(base + r.path, { method: r.method, headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8'), ms: Date.now() - t0, headers: res.headers }));
      res.on('error', reject);
    });
    req.setTimeout(5000, () => req.destroy(new Error('no answer within 5 s')));
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (retry && req.reusedSocket && (err.code === 'ECONNRESET' || err.code === 'EPIPE')) send(base, agent, r, false).then(resolve, reject);
      else reject(err);
    });
    req.end(r.raw);
  });
}

/** What the service holds, read through the API as the admin: it must not change. */
async function snapshot(api: Client): Promise<string> {
  const paths = [
    '/projects', '/nodes/all', '/nodes/free', '/node/n1', '/node/n2', '/switches', '/switch/s1', '/switch/s1/port/gi1/0/1', '/switch/s1/port/gi1/0/2',
    '/networks', '/network/w1', '/network/pub', '/network/w1/attachments', '/project/p1/nodes', '/project/p1/networks', '/project/p1/headnodes',
    '/project/p2/nodes', '/headnode/h1', '/node/n1/networking_actions', '/project/p1/quota', '/project/p1/leases', '/node/n1/lease', '/admin/maintenance', '/admin/nodes/attention',
    ...['project/p1', 'project/p2', 'node/n1', 'node/n2', 'nic/n1/eth0', 'nic/n1/eth1', 'switch/s1', 'port/s1/gi1%2F0%2F1', 'network/w1', 'network/pub', 'user/u1', 'user/u2', `user/${ADMIN.user}`, 'headnode/h1']
      .map((x) => `/admin/actors/${x}`),
  ];
  const rs = await Promise.all(paths.map((p) => api.get(p)));
  return JSON.stringify(rs.map((r, i) => {
    const body = r.body && typeof r.body === 'object' && 'live' in r.body ? { ...r.body, live: undefined } : r.body;
    return [paths[i], r.status, body];
  }));
}

function checkAnswer(a: Answer, what: string): void {
  expect(a.status, `${what} → ${a.status} ${a.text.slice(0, 300)}`).to.be.within(400, 499);
  let body: unknown;
  try {
    body = JSON.parse(a.text);
  } catch {
    throw new Error(`${what} → ${a.status} without a JSON body: ${a.text.slice(0, 200)}`);
  }
  expect(body, what).to.be.an('object').that.has.all.keys('type', 'msg');
  const { type, msg } = body as { type: unknown; msg: unknown };
  expect(type, what).to.be.a('string');
  expect(msg, what).to.be.a('string');
  expect((msg as string).length, `${what}: ${(msg as string).slice(0, 200)}`).to.be.at.most(1100);
  expect(a.ms, `${what}: answered in ${a.ms} ms`).to.be.below(1000);
  if (a.status === 429) expect(a.headers['retry-after'], what).to.be.a('string');
}

const describeRequest = (r: FuzzRequest) =>
  `${r.caller} [${r.defects.join(',')}] ${r.method} ${r.path.slice(0, 200)}${r.path.length > 200 ? '…' : ''} body=${r.raw === undefined ? '-' : JSON.stringify(String(r.raw).slice(0, 120))} headers=${JSON.stringify({ ...r.headers, authorization: undefined })}`;

describe('fuzz: hostile requests on every route (fast-check)', function () {
  this.timeout(SOAK ? 0 : 240_000);
  let dir: string;
  let p: ServerProcess;
  let api: Client;
  let baseline: string;
  let agent: Agent;
  let requests = 0;
  const tally: Record<number, number> = {};

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'hilt-fuzz-'));
    p = await startServerProcess({ HILT_DATA_DIR: dir, HILT_ADMIN_USER: ADMIN.user, HILT_ADMIN_PASSWORD: ADMIN.password, HILT_HEADNODE_DRIVER: 'mock' });
    api = new Client(p.url, ADMIN);
    await must(api.put('/project/p1'));
    await must(api.put('/project/p2'));
    await must(api.put('/auth/basic/user/u1', { password: MEMBER.password }));
    await must(api.put('/auth/basic/user/u2', { password: OUTSIDER.password }));
    await must(api.post('/auth/basic/user/u1/add_project', { project: 'p1' }));
    await must(api.put('/node/n1', { obm: obm('bmc-fuzz-1'), metadata: { rack: 'r1' } }));
    await must(api.put('/node/n2', { obm: obm('bmc-fuzz-2') }));
    await must(api.put('/node/n1/nic/eth0', { macaddr: 'de:ad:be:ef:00:01' }));
    await must(api.put('/node/n1/nic/eth1', { macaddr: 'de:ad:be:ef:00:02' }));
    await must(api.put('/switch/s1', mockSwitch));
    await must(api.put('/switch/s1/port/gi1/0/1'));
    await must(api.put('/switch/s1/port/gi1/0/2'));
    await must(api.post('/switch/s1/port/gi1/0/1/connect_nic', { node: 'n1', nic: 'eth0' }));
    await must(api.post('/project/p1/connect_node', { node: 'n1' }));
    await must(api.put('/node/n1/lease', { expires_at: new Date(Date.now() + 10 * 86_400_000).toISOString() }));
    await must(api.put('/project/p1/quota', { nodes: 5, networks: null }));
    await must(api.put('/network/w1', { owner: 'p1', access: 'p1', net_id: '' }));
    await must(api.put('/network/pub', { owner: 'admin', access: '', net_id: '3001' }));
    const op = await must(api.post('/node/n1/nic/eth0/connect_network', { network: 'w1' }), 202);
    for (let i = 0; i < 200 && (await api.get(`/networking_action/${op.body.status_id}`)).body.status === 'PENDING'; i++) await new Promise((r) => setTimeout(r, 10));
    FIXTURE.status = [op.body.status_id];
    await must(api.put('/headnode/h1', { project: 'p1', base_img: 'base-headnode' }));
    await must(api.put('/headnode/h1/hnic/e0'));
    baseline = await snapshot(api);
    agent = new Agent({ keepAlive: true, maxSockets: 4 });
  });

  after(async () => {
    agent?.destroy();
    if (p) {
      record(p.output());
      p.child.kill('SIGTERM');
      await p.exited;
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it('covers every route the service has', async () => {
    const { startTestServer, stopTestServer } = await import('../helpers/server');
    const ts = await startTestServer();
    const toTemplate = (url: string) => url.replace(/^\/v0/, '').replace(/:(\w+)/g, '{x}').replace(/\*/g, '{x}');
    const served = new Set(ts.app.routeTable.filter((r) => r.method !== 'HEAD' && !/openapi|^\/docs/.test(r.url)).map((r) => `${r.method} ${toTemplate(r.url)}`));
    const listed = new Set(ROUTES.map((r) => `${r.method} ${r.path.replace(/\{(\w+)\}/g, '{x}')}`.replace(/\{x\}\/(connect_nic|detach_nic|revert|clear_doubt)$/, '{x}').replace(/\{x\}\/journal$/, '{x}').replace('/nodes/all', '/nodes/{x}').replace('/nodes/free', '/nodes/{x}').replace(/\/admin\/actors\/\{x\}\/\{x\}$/, '/admin/actors/{x}/{x}')));
    const missing = [...served].filter((r) => !listed.has(r) && !NOT_FUZZED.test(r));
    expect(missing, 'routes not fuzzed').to.deep.equal([]);
    await stopTestServer(ts);
  });

  it(`answers ${RUNS} hostile requests with a 4xx and the JSON error body within a second; the state is unchanged, the process alive (seed ${SEED})`, async () => {
    console.log(`      fuzz seed ${SEED} (HILT_FUZZ_SEED=${SEED} to run these inputs again), ${RUNS} requests`);
    let n = 0;
    await fc.assert(
      fc.asyncProperty(requestArb(), async (r) => {
        const what = describeRequest(r);
        const a = await send(p.url, agent, r);
        requests++;
        tally[a.status] = (tally[a.status] ?? 0) + 1;
        record(a.text);
        checkAnswer(a, what);
        expect(p.child.exitCode, `the service exited after ${what}`).to.equal(null);
        // The whole state every 10 inputs (and at the end): the per-request check is the answer.
        if (++n % 10 === 0 || r.caller === 'admin') expect(await snapshot(api), `the state changed after ${what}`).to.equal(baseline);
      }),
      { seed: SEED, numRuns: RUNS, verbose: 1, markInterruptAsFailure: true },
    );
    expect(await snapshot(api)).to.equal(baseline);
    console.log(`      ${requests} requests sent (shrinking included); answers ${JSON.stringify(tally)}; 0 violations`);
  });

  it(`answers malformed HTTP on a raw socket with a 4xx and the JSON error body, or a close when the request never completed (seed ${SEED})`, async () => {
    const [host, port] = p.url.replace('http://', '').split(':');
    const line = fc.oneof(
      fc.constantFrom('GET /projects HTTP/1.1', 'GET /projects HTTP/9.9', 'GE T /projects HTTP/1.1', 'GET projects HTTP/1.1', 'GET /pro jects HTTP/1.1', 'GET /\u0001 HTTP/1.1', '/projects', 'GET', 'PUT /project/%zz HTTP/1.1', 'BREW /pot HTTP/1.1'),
      fc.string({ unit: 'grapheme-ascii', maxLength: 40 }),
    );
    const header = fc.oneof(
      fc.constantFrom('Host: x', 'Content-Length: 5', 'Content-Length: -1', 'Content-Length: abc', 'Content-Length: 1\r\nContent-Length: 2', 'Transfer-Encoding: chunked', 'Transfer-Encoding: gzip, chunked', ' folded: header', 'Bad Header: x', 'X: \u0000', `Authorization: ${basic(ADMIN)}`, `X-Big: ${'b'.repeat(20_000)}`),
      fc.string({ unit: 'grapheme-ascii', maxLength: 40 }),
    );
    const rawTally: Record<string, number> = {};
    const rawArb = fc.record({ line, headers: fc.array(header, { maxLength: 4 }), body: fc.string({ maxLength: 40 }), complete: fc.boolean() });
    await fc.assert(
      fc.asyncProperty(rawArb, async (g) => {
        const text = `${g.line}\r\n${g.headers.join('\r\n')}${g.headers.length ? '\r\n' : ''}${g.complete ? '\r\n' : ''}${g.body}`;
        const t0 = Date.now();
        const out = await new Promise<string>((resolve) => {
          const s = connect(Number(port), host);
          let got = '';
          const timer = setTimeout(() => {
            s.destroy();
            resolve(got);
          }, 1500);
          s.on('data', (d) => (got += d.toString('latin1')));
          s.on('error', () => undefined);
          s.on('close', () => {
            clearTimeout(timer);
            resolve(got);
          });
          s.end(text);
        });
        const ms = Date.now() - t0;
        record(out);
        const key = out ? out.slice(9, 12) : 'closed';
        rawTally[key] = (rawTally[key] ?? 0) + 1;
        const what = JSON.stringify(text.slice(0, 200));
        expect(p.child.exitCode, `the service exited after ${what}`).to.equal(null);
        if (!out) {
          expect(ms, `${what}: no answer, and the connection not closed within a second`).to.be.below(1000);
          return;
        }
        const m = /^HTTP\/1\.1 (\d{3}) /.exec(out);
        expect(m, `${what} → ${out.slice(0, 200)}`).to.not.equal(null);
        const status = Number(m![1]);
        // A request that parses completely may be a good one (a GET of the admin's): then it is no defect.
        if (status < 400) return;
        expect(status, `${what} → ${out.slice(0, 200)}`).to.be.within(400, 499);
        // The first answer only: what follows the request may be read as another one.
        const head = out.slice(0, out.indexOf('\r\n\r\n'));
        const rest = out.slice(head.length + 4);
        const length = /\r\ncontent-length: *(\d+)/i.exec(head);
        const body = length ? Buffer.from(rest, 'latin1').subarray(0, Number(length[1])).toString('utf8') : rest.split('\r\n')[1] ?? '';
        const parsed = JSON.parse(body);
        expect(parsed, what).to.have.all.keys('type', 'msg');
        expect(ms, what).to.be.below(1000);
      }),
      { seed: SEED, numRuns: Math.max(50, Math.floor(RUNS / 5)), markInterruptAsFailure: true },
    );
    console.log(`      raw answers ${JSON.stringify(rawTally)}; 0 violations`);
    expect(await snapshot(api)).to.equal(baseline);
  });
});
