/**
 * Authorization matrix over real HTTP: every implemented call, for five callers.
 *
 *   admin  - the bootstrap admin
 *   member - alice, a member of the cell's project P (the owning/relevant project)
 *   other  - bob, a member of another project only
 *   badpw  - the admin's user name with a wrong password
 *   anon   - no Authorization header
 *
 * Every (row, caller) cell gets its own fresh fixture (its own project P with alice in it, and
 * its own nodes, switches, networks and users named after the cell), so each expected status is
 * exact and independent of the other cells. Expected statuses come from docs/api-conventions.md:
 * §1 (every call needs authentication; 401 body), §2 (a bad request is 400 before
 * authentication), §3 (admin-only calls check admin first; other calls look the path object up
 * first), and the per-call orders of §4-§7, §10, §12.
 *
 * For rows that change state, `state` is a snapshot read as admin: a refusal must leave it
 * unchanged and a success must change it.
 */
import { expect } from 'chai';
import {
  startTestServer, TestServer, Client, Creds, Res, ADMIN, MOCK_OBM, MOCK_SWITCH, must, makeUser, obm, mockSwitch,
} from '../../helpers/server';

type Who = 'admin' | 'member' | 'other' | 'badpw' | 'anon';
const CALLERS: Who[] = ['admin', 'member', 'other', 'badpw', 'anon'];
/** expected status per caller, in CALLERS order: [admin, member, other, badpw, anon] */
type Expect = [number, number, number, number, number];

const ALICE: Creds = { user: 'alice', password: 'alice: pw ü' };
const BOB: Creds = { user: 'bob', password: 'bob-pw' };
const CREDS: Record<Who, Creds | null> = {
  admin: ADMIN,
  member: ALICE,
  other: BOB,
  badpw: { user: ADMIN.user, password: ADMIN.password + 'x' },
  anon: null,
};
const TAG: Record<Who, string> = { admin: 'A', member: 'M', other: 'O', badpw: 'B', anon: 'N' };
const OTHER_PROJECT = 'other-proj';
const U = 401;

let ts: TestServer;
let api: Client;

/** The fixture of one cell. Names are unique per cell; only P (with alice in it) exists up front. */
class Fx {
  readonly P: string;
  /** a second project; created only by setups that need it */
  readonly Q: string;
  readonly n: string;
  readonly s: string;
  readonly w: string;
  readonly u: string;
  constructor(readonly id: string, readonly who: Who) {
    this.P = `P${id}`;
    this.Q = `Q${id}`;
    this.n = `n${id}`;
    this.s = `s${id}`;
    this.w = `w${id}`;
    this.u = `u${id}`;
  }
  /** the caller's own user name (the admin's for anonymous callers) */
  get self(): string {
    return CREDS[this.who]?.user ?? ADMIN.user;
  }
  get bmcHost(): string {
    return `bmc-${this.n}`;
  }
  async project(name: string): Promise<void> {
    await must(api.put(`/project/${name}`));
  }
  /** node f.n (mock OBM on its own BMC host), with nics, optionally in a project */
  async node(opts: { nics?: string[]; project?: string } = {}): Promise<void> {
    await must(api.put(`/node/${this.n}`, { obm: obm(this.bmcHost) }));
    for (const nic of opts.nics ?? []) await must(api.put(`/node/${this.n}/nic/${nic}`, { macaddr: `mac-${nic}` }));
    if (opts.project) await must(api.post(`/project/${opts.project}/connect_node`, { node: this.n }));
  }
  async sw(ports: string[] = []): Promise<void> {
    await must(api.put(`/switch/${this.s}`, mockSwitch));
    for (const p of ports) await must(api.put(`/switch/${this.s}/port/${p}`));
  }
  async wire(port: string, nic: string): Promise<void> {
    await must(api.post(`/switch/${this.s}/port/${port}/connect_nic`, { node: this.n, nic }));
  }
  async net(owner: string, access: string, netId = ''): Promise<void> {
    await must(api.put(`/network/${this.w}`, { owner, access, net_id: netId }));
  }
  async grant(project: string): Promise<void> {
    await must(api.put(`/network/${this.w}/access/${project}`));
  }
  /** headnode h<id> of P (mock driver), with hnic eth0 */
  get h(): string {
    return `h${this.id}`;
  }
  async headnode(opts: { start?: boolean } = {}): Promise<void> {
    await must(api.put(`/headnode/${this.h}`, { project: this.P, base_img: 'base-headnode' }));
    await must(api.put(`/headnode/${this.h}/hnic/eth0`));
    if (opts.start) await must(api.post(`/headnode/${this.h}/start`));
  }
  async user(projects: string[] = [], isAdmin = false): Promise<Creds> {
    return makeUser(api, this.u, 'u-pw', projects, isAdmin);
  }
}

/** Snapshot: status and body of GETs as admin. */
async function gets(...paths: string[]): Promise<unknown> {
  const out: unknown[] = [];
  for (const p of paths) {
    const r = await api.get(p);
    out.push({ path: p, status: r.status, body: r.body });
  }
  return out;
}
/** Which statuses a set of users get on a set of calls (for user rows: who can do what). */
async function abilities(calls: [Creds, string][]): Promise<number[]> {
  const out: number[] = [];
  for (const [c, path] of calls) out.push((await api.with(c).get(path)).status);
  return out;
}
const bmcState = (f: Fx) => ({ ...ts.mockObm.state(f.bmcHost) });

interface Row {
  call: string;
  method: 'GET' | 'PUT' | 'POST' | 'DELETE' | 'PATCH';
  path: (f: Fx) => string;
  body?: (f: Fx) => unknown;
  /** sent verbatim instead of a JSON body */
  raw?: string;
  setup?: (f: Fx) => Promise<void>;
  /** admin's view of the state the call may change */
  state?: (f: Fx) => Promise<unknown> | unknown;
  /** extra checks on a 2xx answer */
  check?: (r: Res, f: Fx) => void | Promise<void>;
  expect: Expect;
}

const ROWS: Row[] = [
  // ───────────── projects (§3: project_create/delete, list_projects admin-only; §4) ─────────────
  { call: 'project_create', method: 'PUT', path: (f) => `/project/${f.Q}`, state: () => gets('/projects'), expect: [200, U, U, U, U] },
  { call: 'project_create of an existing project (admin first)', method: 'PUT', path: (f) => `/project/${f.P}`, state: () => gets('/projects'), expect: [409, U, U, U, U] },
  { call: 'project_delete', method: 'DELETE', path: (f) => `/project/${f.P}`, state: () => gets('/projects'), expect: [200, U, U, U, U] },
  { call: 'project_delete of a missing project (409, admin first)', method: 'DELETE', path: (f) => `/project/${f.Q}`, state: () => gets('/projects'), expect: [409, U, U, U, U] },
  {
    call: 'project_delete of a project with nodes', method: 'DELETE', path: (f) => `/project/${f.P}`,
    setup: (f) => f.node({ project: f.P }), state: (f) => gets('/projects', `/node/${f.n}`), expect: [409, U, U, U, U],
  },
  {
    call: 'list_projects', method: 'GET', path: () => '/projects', expect: [200, U, U, U, U],
    check: (r, f) => { expect(r.body).to.be.an('array').that.includes(f.P); },
  },
  {
    call: 'project_connect_node', method: 'POST', path: (f) => `/project/${f.P}/connect_node`, body: (f) => ({ node: f.n }),
    setup: (f) => f.node(), state: (f) => gets(`/node/${f.n}`, `/project/${f.P}/nodes`), expect: [200, 200, U, U, U],
    check: async (_r, f) => { expect((await api.get(`/node/${f.n}`)).body.project).to.equal(f.P); },
  },
  {
    call: 'project_connect_node, missing project (404 before auth)', method: 'POST', path: (f) => `/project/${f.Q}/connect_node`, body: (f) => ({ node: f.n }),
    setup: (f) => f.node(), state: (f) => gets(`/node/${f.n}`), expect: [404, 404, 404, U, U],
  },
  {
    call: 'project_connect_node, missing node (auth before node 404)', method: 'POST', path: (f) => `/project/${f.P}/connect_node`, body: (f) => ({ node: f.n }),
    state: (f) => gets(`/node/${f.n}`, `/project/${f.P}/nodes`), expect: [404, 404, U, U, U],
  },
  {
    call: 'project_connect_node, node of another project', method: 'POST', path: (f) => `/project/${f.P}/connect_node`, body: (f) => ({ node: f.n }),
    setup: async (f) => { await f.project(f.Q); await f.node({ project: f.Q }); }, state: (f) => gets(`/node/${f.n}`), expect: [409, 409, U, U, U],
  },
  {
    call: 'project_connect_node, node already in this project', method: 'POST', path: (f) => `/project/${f.P}/connect_node`, body: (f) => ({ node: f.n }),
    setup: (f) => f.node({ project: f.P }), state: (f) => gets(`/node/${f.n}`), expect: [409, 409, U, U, U],
  },
  {
    call: 'project_detach_node', method: 'POST', path: (f) => `/project/${f.P}/detach_node`, body: (f) => ({ node: f.n }),
    setup: (f) => f.node({ project: f.P }), state: (f) => gets(`/node/${f.n}`, '/nodes/free'), expect: [200, 200, U, U, U],
    check: async (_r, f) => { expect((await api.get(`/node/${f.n}`)).body.project).to.equal(null); },
  },
  {
    call: 'project_detach_node, free node (409)', method: 'POST', path: (f) => `/project/${f.P}/detach_node`, body: (f) => ({ node: f.n }),
    setup: (f) => f.node(), state: (f) => gets(`/node/${f.n}`), expect: [409, 409, U, U, U],
  },
  {
    call: 'project_detach_node, node of another project (409)', method: 'POST', path: (f) => `/project/${f.P}/detach_node`, body: (f) => ({ node: f.n }),
    setup: async (f) => { await f.project(f.Q); await f.node({ project: f.Q }); }, state: (f) => gets(`/node/${f.n}`), expect: [409, 409, U, U, U],
  },
  {
    call: 'project_detach_node, missing node', method: 'POST', path: (f) => `/project/${f.P}/detach_node`, body: (f) => ({ node: f.n }),
    expect: [404, 404, U, U, U],
  },
  {
    call: 'project_detach_node, missing project', method: 'POST', path: (f) => `/project/${f.Q}/detach_node`, body: (f) => ({ node: f.n }),
    setup: (f) => f.node(), state: (f) => gets(`/node/${f.n}`), expect: [404, 404, 404, U, U],
  },
  {
    call: 'list_project_nodes', method: 'GET', path: (f) => `/project/${f.P}/nodes`, setup: (f) => f.node({ project: f.P }), expect: [200, 200, U, U, U],
    check: (r, f) => { expect(r.body).to.deep.equal([f.n]); },
  },
  { call: 'list_project_nodes, missing project', method: 'GET', path: (f) => `/project/${f.Q}/nodes`, expect: [404, 404, 404, U, U] },
  {
    call: 'list_project_networks', method: 'GET', path: (f) => `/project/${f.P}/networks`, setup: (f) => f.net(f.P, f.P), expect: [200, 200, U, U, U],
    check: (r, f) => { expect(r.body).to.deep.equal([f.w]); },
  },
  { call: 'list_project_networks, missing project', method: 'GET', path: (f) => `/project/${f.Q}/networks`, expect: [404, 404, 404, U, U] },
  {
    call: 'list_project_headnodes', method: 'GET', path: (f) => `/project/${f.P}/headnodes`, expect: [200, 200, U, U, U],
    check: (r) => { expect(r.body).to.deep.equal([]); },
  },
  { call: 'list_project_headnodes, missing project', method: 'GET', path: (f) => `/project/${f.Q}/headnodes`, expect: [404, 404, 404, U, U] },

  // ───────────── headnodes (§9; mock driver) ─────────────
  {
    call: 'headnode_create', method: 'PUT', path: (f) => `/headnode/${f.h}`, body: (f) => ({ project: f.P, base_img: 'base-headnode' }),
    state: (f) => gets(`/project/${f.P}/headnodes`), expect: [200, 200, U, U, U],
  },
  {
    call: 'headnode_create, base image not installed (400 first)', method: 'PUT', path: (f) => `/headnode/${f.h}`,
    body: (f) => ({ project: f.Q, base_img: 'nope' }), state: (f) => gets(`/project/${f.P}/headnodes`), expect: [400, 400, 400, U, U],
  },
  {
    call: 'headnode_create, existing name (409 before project and auth)', method: 'PUT', path: (f) => `/headnode/${f.h}`,
    body: (f) => ({ project: f.Q, base_img: 'base-headnode' }), setup: (f) => f.headnode(), state: (f) => gets(`/headnode/${f.h}`), expect: [409, 409, 409, U, U],
  },
  {
    call: 'headnode_delete', method: 'DELETE', path: (f) => `/headnode/${f.h}`, setup: (f) => f.headnode({ start: true }),
    state: (f) => gets(`/headnode/${f.h}`, `/project/${f.P}/headnodes`), expect: [200, 200, U, U, U],
  },
  { call: 'headnode_delete, missing headnode (404 before auth)', method: 'DELETE', path: (f) => `/headnode/${f.h}`, expect: [404, 404, 404, U, U] },
  {
    call: 'headnode_start', method: 'POST', path: (f) => `/headnode/${f.h}/start`, setup: (f) => f.headnode(),
    state: (f) => gets(`/headnode/${f.h}`), expect: [200, 200, U, U, U],
    check: async (_r, f) => { expect((await api.get(`/headnode/${f.h}`)).body.vncport).to.be.a('number'); },
  },
  {
    call: 'headnode_stop', method: 'POST', path: (f) => `/headnode/${f.h}/stop`, setup: (f) => f.headnode({ start: true }),
    state: (f) => gets(`/headnode/${f.h}`), expect: [200, 200, U, U, U],
  },
  {
    call: 'show_headnode', method: 'GET', path: (f) => `/headnode/${f.h}`, setup: (f) => f.headnode(), expect: [200, 200, U, U, U],
    check: (r, f) => { expect(r.body).to.include({ name: f.h, project: f.P, vncport: null }); expect(r.body.hnics).to.deep.equal(['eth0']); },
  },
  {
    call: 'headnode_create_hnic', method: 'PUT', path: (f) => `/headnode/${f.h}/hnic/eth1`, setup: (f) => f.headnode(),
    state: (f) => gets(`/headnode/${f.h}`), expect: [200, 200, U, U, U],
  },
  {
    call: 'headnode_create_hnic after start (409)', method: 'PUT', path: (f) => `/headnode/${f.h}/hnic/eth1`, setup: (f) => f.headnode({ start: true }),
    state: (f) => gets(`/headnode/${f.h}`), expect: [409, 409, U, U, U],
  },
  {
    call: 'headnode_delete_hnic', method: 'DELETE', path: (f) => `/headnode/${f.h}/hnic/eth0`, setup: (f) => f.headnode(),
    state: (f) => gets(`/headnode/${f.h}`), expect: [200, 200, U, U, U],
  },
  {
    call: 'headnode_connect_network', method: 'POST', path: (f) => `/headnode/${f.h}/hnic/eth0/connect_network`, body: (f) => ({ network: f.w }),
    setup: async (f) => { await f.headnode(); await f.net(f.P, f.P); }, state: (f) => gets(`/headnode/${f.h}`, `/network/${f.w}`), expect: [200, 200, U, U, U],
  },
  {
    call: 'headnode_connect_network, network of another project (409)', method: 'POST', path: (f) => `/headnode/${f.h}/hnic/eth0/connect_network`, body: (f) => ({ network: f.w }),
    setup: async (f) => { await f.headnode(); await f.project(f.Q); await f.net(f.Q, f.Q); }, state: (f) => gets(`/headnode/${f.h}`), expect: [409, 409, U, U, U],
  },
  {
    call: 'headnode_detach_network', method: 'POST', path: (f) => `/headnode/${f.h}/hnic/eth0/detach_network`,
    setup: async (f) => { await f.headnode(); await f.net(f.P, f.P); await must(api.post(`/headnode/${f.h}/hnic/eth0/connect_network`, { network: f.w })); },
    state: (f) => gets(`/headnode/${f.h}`), expect: [200, 200, U, U, U],
  },
  {
    call: 'list_headnode_images', method: 'GET', path: () => '/headnode_images', expect: [200, 200, 200, U, U],
    check: (r) => { expect(r.body).to.deep.equal(['base-headnode']); },
  },

  // ───────────── nodes and nics (§3 admin-only; §5) ─────────────
  {
    call: 'node_register', method: 'PUT', path: (f) => `/node/${f.n}`, body: (f) => ({ obm: obm(f.bmcHost) }),
    state: (f) => gets(`/node/${f.n}`, '/nodes/all'), expect: [200, U, U, U, U],
  },
  {
    call: 'node_register of an existing node (admin first)', method: 'PUT', path: (f) => `/node/${f.n}`, body: (f) => ({ obm: obm(f.bmcHost) }),
    setup: (f) => f.node({ project: f.P }), state: (f) => gets(`/node/${f.n}`), expect: [409, U, U, U, U],
  },
  {
    call: 'node_register with bad OBM fields (checked after admin)', method: 'PUT', path: (f) => `/node/${f.n}`,
    body: () => ({ obm: { type: MOCK_OBM, host: 'h' } }), state: (f) => gets(`/node/${f.n}`), expect: [400, U, U, U, U],
  },
  {
    call: 'node_register with an unknown OBM type (checked after admin)', method: 'PUT', path: (f) => `/node/${f.n}`,
    body: () => ({ obm: { ...obm(), type: 'http://schema.massopencloud.org/haas/v0/obm/nope' } }), state: (f) => gets(`/node/${f.n}`), expect: [400, U, U, U, U],
  },
  { call: 'node_delete', method: 'DELETE', path: (f) => `/node/${f.n}`, setup: (f) => f.node(), state: (f) => gets(`/node/${f.n}`, '/nodes/all'), expect: [200, U, U, U, U] },
  { call: 'node_delete of a missing node (admin first)', method: 'DELETE', path: (f) => `/node/${f.n}`, expect: [404, U, U, U, U] },
  {
    call: 'node_delete of a node in the project', method: 'DELETE', path: (f) => `/node/${f.n}`, setup: (f) => f.node({ project: f.P }),
    state: (f) => gets(`/node/${f.n}`), expect: [409, U, U, U, U],
  },
  {
    call: 'node_delete of a node with nics', method: 'DELETE', path: (f) => `/node/${f.n}`, setup: (f) => f.node({ nics: ['eth0'] }),
    state: (f) => gets(`/node/${f.n}`), expect: [409, U, U, U, U],
  },
  {
    call: 'node_register_nic (node of the project)', method: 'PUT', path: (f) => `/node/${f.n}/nic/eth0`, body: () => ({ macaddr: 'aa:bb' }),
    setup: (f) => f.node({ project: f.P }), state: (f) => gets(`/node/${f.n}`), expect: [200, U, U, U, U],
  },
  { call: 'node_register_nic, missing node (admin first)', method: 'PUT', path: (f) => `/node/${f.n}/nic/eth0`, body: () => ({ macaddr: 'aa:bb' }), expect: [404, U, U, U, U] },
  {
    call: 'node_register_nic, existing nic', method: 'PUT', path: (f) => `/node/${f.n}/nic/eth0`, body: () => ({ macaddr: 'aa:bb' }),
    setup: (f) => f.node({ nics: ['eth0'], project: f.P }), state: (f) => gets(`/node/${f.n}`), expect: [409, U, U, U, U],
  },
  {
    call: 'node_delete_nic (node of the project)', method: 'DELETE', path: (f) => `/node/${f.n}/nic/eth0`,
    setup: (f) => f.node({ nics: ['eth0'], project: f.P }), state: (f) => gets(`/node/${f.n}`), expect: [200, U, U, U, U],
  },
  {
    call: 'node_delete_nic, missing nic', method: 'DELETE', path: (f) => `/node/${f.n}/nic/eth9`,
    setup: (f) => f.node({ nics: ['eth0'] }), state: (f) => gets(`/node/${f.n}`), expect: [404, U, U, U, U],
  },
  { call: 'node_delete_nic, missing node', method: 'DELETE', path: (f) => `/node/${f.n}/nic/eth0`, expect: [404, U, U, U, U] },
  // §3: free node → admin only; assigned node → its project or admin; lookup (404) first.
  {
    call: 'node_power_cycle of a free node', method: 'POST', path: (f) => `/node/${f.n}/power_cycle`, body: () => ({ force: true }),
    setup: (f) => f.node(), state: bmcState, expect: [200, U, U, U, U],
  },
  {
    call: 'node_power_cycle of a node of the project', method: 'POST', path: (f) => `/node/${f.n}/power_cycle`,
    setup: (f) => f.node({ project: f.P }), state: bmcState, expect: [200, 200, U, U, U],
    check: (_r, f) => { expect(ts.mockObm.state(f.bmcHost)).to.include({ power: 'on', bootdev: 'pxe', cycles: 1 }); },
  },
  { call: 'node_power_cycle of a missing node', method: 'POST', path: (f) => `/node/${f.n}/power_cycle`, expect: [404, 404, 404, U, U] },
  {
    call: 'node_power_off of a free node', method: 'POST', path: (f) => `/node/${f.n}/power_off`,
    setup: async (f) => { await f.node(); await must(api.post(`/node/${f.n}/power_cycle`)); }, state: bmcState, expect: [200, U, U, U, U],
  },
  {
    call: 'node_power_off of a node of the project', method: 'POST', path: (f) => `/node/${f.n}/power_off`,
    setup: async (f) => { await f.node({ project: f.P }); await must(api.post(`/node/${f.n}/power_cycle`)); }, state: bmcState, expect: [200, 200, U, U, U],
    check: (_r, f) => { expect(ts.mockObm.state(f.bmcHost).power).to.equal('off'); },
  },
  { call: 'node_power_off of a missing node', method: 'POST', path: (f) => `/node/${f.n}/power_off`, expect: [404, 404, 404, U, U] },
  {
    call: 'node_power_on of a free node', method: 'POST', path: (f) => `/node/${f.n}/power_on`,
    setup: (f) => f.node(), state: bmcState, expect: [200, U, U, U, U],
  },
  {
    call: 'node_power_on of a node of the project', method: 'POST', path: (f) => `/node/${f.n}/power_on`,
    setup: (f) => f.node({ project: f.P }), state: bmcState, expect: [200, 200, U, U, U],
    check: (_r, f) => { expect(ts.mockObm.state(f.bmcHost).power).to.equal('on'); },
  },
  { call: 'node_power_on of a missing node', method: 'POST', path: (f) => `/node/${f.n}/power_on`, expect: [404, 404, 404, U, U] },
  {
    call: 'node_set_bootdev of a free node', method: 'PUT', path: (f) => `/node/${f.n}/boot_device`, body: () => ({ bootdev: 'disk' }),
    setup: (f) => f.node(), state: bmcState, expect: [200, U, U, U, U],
  },
  {
    call: 'node_set_bootdev of a node of the project', method: 'PUT', path: (f) => `/node/${f.n}/boot_device`, body: () => ({ bootdev: 'pxe' }),
    setup: (f) => f.node({ project: f.P }), state: bmcState, expect: [200, 200, U, U, U],
    check: (_r, f) => { expect(ts.mockObm.state(f.bmcHost).bootdev).to.equal('pxe'); },
  },
  // the device is checked after authorization, as HIL did (§3)
  {
    call: 'node_set_bootdev with an unknown device', method: 'PUT', path: (f) => `/node/${f.n}/boot_device`, body: () => ({ bootdev: 'floppy' }),
    setup: (f) => f.node({ project: f.P }), state: bmcState, expect: [400, 400, U, U, U],
  },
  { call: 'node_set_bootdev of a missing node', method: 'PUT', path: (f) => `/node/${f.n}/boot_device`, body: () => ({ bootdev: 'pxe' }), expect: [404, 404, 404, U, U] },
  // power_status follows the power rule of docs/api-conventions.md §3 (as HIL's node_power_status does).
  {
    call: 'node_power_status of a free node', method: 'GET', path: (f) => `/node/${f.n}/power_status`, setup: (f) => f.node(), expect: [200, U, U, U, U],
    check: (r) => { expect(r.body).to.deep.equal({ power_status: 'off' }); },
  },
  {
    call: 'node_power_status of a node of the project', method: 'GET', path: (f) => `/node/${f.n}/power_status`,
    setup: async (f) => { await f.node({ project: f.P }); await must(api.post(`/node/${f.n}/power_cycle`)); }, expect: [200, 200, U, U, U],
    check: (r) => { expect(r.body).to.deep.equal({ power_status: 'on' }); },
  },
  { call: 'node_power_status of a missing node', method: 'GET', path: (f) => `/node/${f.n}/power_status`, expect: [404, 404, 404, U, U] },
  // §1: list_nodes needs authentication, nothing more.
  {
    call: 'list_nodes all', method: 'GET', path: () => '/nodes/all', setup: (f) => f.node({ project: f.P }), expect: [200, 200, 200, U, U],
    check: (r, f) => { expect(r.body).to.be.an('array').that.includes(f.n); },
  },
  {
    call: 'list_nodes free', method: 'GET', path: () => '/nodes/free', setup: (f) => f.node(), expect: [200, 200, 200, U, U],
    check: (r, f) => { expect(r.body).to.be.an('array').that.includes(f.n); },
  },
  // §5: show_node: 404 → if assigned, its project or admin; port/switch keys for admins only.
  {
    call: 'show_node of a free node (any authenticated user)', method: 'GET', path: (f) => `/node/${f.n}`,
    setup: async (f) => { await f.node({ nics: ['eth0'] }); await f.sw(['gi1/0/1']); await f.wire('gi1/0/1', 'eth0'); },
    expect: [200, 200, 200, U, U],
    check: (r, f) => {
      expect(r.body).to.include({ name: f.n, project: null });
      expect(r.body.nics).to.have.length(1);
      const nic = r.body.nics[0];
      expect(nic).to.include({ label: 'eth0', macaddr: 'mac-eth0' });
      expect(nic.networks).to.deep.equal({});
      if (f.who === 'admin') expect(nic).to.include({ port: 'gi1/0/1', switch: f.s });
      else expect(nic).to.not.have.any.keys('port', 'switch');
    },
  },
  {
    call: 'show_node of a node of the project', method: 'GET', path: (f) => `/node/${f.n}`, setup: (f) => f.node({ nics: ['eth0'], project: f.P }),
    expect: [200, 200, U, U, U],
    check: (r, f) => {
      expect(r.body).to.include({ name: f.n, project: f.P });
      if (f.who !== 'admin') expect(r.body.nics[0]).to.not.have.any.keys('port', 'switch');
    },
  },
  { call: 'show_node of a missing node', method: 'GET', path: (f) => `/node/${f.n}`, expect: [404, 404, 404, U, U] },

  // ───────────── switches and ports (§3 admin-only; §6, §12) ─────────────
  { call: 'switch_register', method: 'PUT', path: (f) => `/switch/${f.s}`, body: () => mockSwitch, state: (f) => gets(`/switch/${f.s}`, '/switches'), expect: [200, U, U, U, U] },
  {
    call: 'switch_register of an existing switch (admin first)', method: 'PUT', path: (f) => `/switch/${f.s}`, body: () => mockSwitch,
    setup: (f) => f.sw(['gi1/0/1']), state: (f) => gets(`/switch/${f.s}`), expect: [409, U, U, U, U],
  },
  {
    call: 'switch_register with bad driver fields (checked after admin)', method: 'PUT', path: (f) => `/switch/${f.s}`,
    body: () => ({ type: MOCK_SWITCH, hostname: 'h' }), state: (f) => gets(`/switch/${f.s}`), expect: [400, U, U, U, U],
  },
  {
    call: 'switch_register with an unknown type (checked after admin)', method: 'PUT', path: (f) => `/switch/${f.s}`,
    body: () => ({ ...mockSwitch, type: 'http://schema.massopencloud.org/haas/v0/switches/nope' }), state: (f) => gets(`/switch/${f.s}`), expect: [400, U, U, U, U],
  },
  { call: 'switch_delete', method: 'DELETE', path: (f) => `/switch/${f.s}`, setup: (f) => f.sw(), state: (f) => gets(`/switch/${f.s}`), expect: [200, U, U, U, U] },
  { call: 'switch_delete of a missing switch', method: 'DELETE', path: (f) => `/switch/${f.s}`, expect: [404, U, U, U, U] },
  {
    call: 'switch_delete of a switch with ports', method: 'DELETE', path: (f) => `/switch/${f.s}`, setup: (f) => f.sw(['gi1/0/1']),
    state: (f) => gets(`/switch/${f.s}`), expect: [409, U, U, U, U],
  },
  {
    call: 'list_switches', method: 'GET', path: () => '/switches', setup: (f) => f.sw(), expect: [200, U, U, U, U],
    check: (r, f) => { expect(r.body).to.be.an('array').that.includes(f.s); },
  },
  {
    call: 'show_switch', method: 'GET', path: (f) => `/switch/${f.s}`, setup: (f) => f.sw(['gi1/0/1', 'te1/2']), expect: [200, U, U, U, U],
    check: (r, f) => {
      expect(r.body.name).to.equal(f.s);
      expect(r.body.ports).to.have.members(['gi1/0/1', 'te1/2']);
    },
  },
  { call: 'show_switch of a missing switch', method: 'GET', path: (f) => `/switch/${f.s}`, expect: [404, U, U, U, U] },
  {
    call: 'clearing a switch\'s recorded host key (hilt)', method: 'DELETE', path: (f) => `/switch/${f.s}/host_key`,
    // An SSH switch (never contacted here) with a pinned key: show_switch shows it.
    setup: async (f) => void await must(api.put(`/switch/${f.s}`, {
      type: 'http://schema.massopencloud.org/haas/v0/switches/nexus', hostname: '127.0.0.1:22', username: 'u', password: 'p', dummy_vlan: 3999, host_key: `SHA256:${'A'.repeat(43)}`,
    })),
    state: (f) => gets(`/switch/${f.s}`), expect: [200, U, U, U, U],
  },
  { call: 'clearing the host key of a missing switch (hilt)', method: 'DELETE', path: (f) => `/switch/${f.s}/host_key`, expect: [404, U, U, U, U] },
  {
    call: 'switch_register_port (raw /)', method: 'PUT', path: (f) => `/switch/${f.s}/port/gi1/0/1`, setup: (f) => f.sw(),
    state: (f) => gets(`/switch/${f.s}`), expect: [200, U, U, U, U],
  },
  {
    call: 'switch_register_port (percent-encoded /)', method: 'PUT', path: (f) => `/switch/${f.s}/port/te1%2F2`, setup: (f) => f.sw(),
    state: (f) => gets(`/switch/${f.s}`), expect: [200, U, U, U, U],
    check: async (_r, f) => { expect((await api.get(`/switch/${f.s}`)).body.ports).to.deep.equal(['te1/2']); },
  },
  { call: 'switch_register_port, missing switch', method: 'PUT', path: (f) => `/switch/${f.s}/port/gi1/0/1`, expect: [404, U, U, U, U] },
  {
    call: 'switch_register_port, existing port', method: 'PUT', path: (f) => `/switch/${f.s}/port/gi1/0/1`, setup: (f) => f.sw(['gi1/0/1']),
    state: (f) => gets(`/switch/${f.s}`), expect: [409, U, U, U, U],
  },
  {
    call: 'switch_register_port, bad port name (checked after admin)', method: 'PUT', path: (f) => `/switch/${f.s}/port/eth0`, setup: (f) => f.sw(),
    state: (f) => gets(`/switch/${f.s}`), expect: [400, U, U, U, U],
  },
  {
    call: 'switch_delete_port', method: 'DELETE', path: (f) => `/switch/${f.s}/port/gi1/0/1`, setup: (f) => f.sw(['gi1/0/1']),
    state: (f) => gets(`/switch/${f.s}`), expect: [200, U, U, U, U],
  },
  {
    call: 'switch_delete_port, missing port', method: 'DELETE', path: (f) => `/switch/${f.s}/port/gi1/0/1`, setup: (f) => f.sw(['gi1/0/2']),
    state: (f) => gets(`/switch/${f.s}`), expect: [404, U, U, U, U],
  },
  {
    call: 'switch_delete_port, wired port', method: 'DELETE', path: (f) => `/switch/${f.s}/port/gi1/0/1`,
    setup: async (f) => { await f.sw(['gi1/0/1']); await f.node({ nics: ['eth0'] }); await f.wire('gi1/0/1', 'eth0'); },
    state: (f) => gets(`/switch/${f.s}`, `/switch/${f.s}/port/gi1/0/1`), expect: [409, U, U, U, U],
  },
  {
    call: 'show_port of a port wired to a node of the project', method: 'GET', path: (f) => `/switch/${f.s}/port/gi1/0/1`,
    setup: async (f) => { await f.sw(['gi1/0/1']); await f.node({ nics: ['eth0'], project: f.P }); await f.wire('gi1/0/1', 'eth0'); },
    expect: [200, U, U, U, U],
    check: (r, f) => { expect(r.body).to.deep.equal({ node: f.n, nic: 'eth0', networks: {} }); },
  },
  {
    call: 'show_port of an unwired port', method: 'GET', path: (f) => `/switch/${f.s}/port/gi1%2F0%2F1`, setup: (f) => f.sw(['gi1/0/1']), expect: [200, U, U, U, U],
    check: (r) => { expect(r.body).to.deep.equal({}); },
  },
  { call: 'show_port of a missing port', method: 'GET', path: (f) => `/switch/${f.s}/port/gi1/0/1`, setup: (f) => f.sw(), expect: [404, U, U, U, U] },
  {
    call: 'port_connect_nic (nic of a node of the project)', method: 'POST', path: (f) => `/switch/${f.s}/port/gi1/0/1/connect_nic`,
    body: (f) => ({ node: f.n, nic: 'eth0' }),
    setup: async (f) => { await f.sw(['gi1/0/1']); await f.node({ nics: ['eth0'], project: f.P }); },
    state: (f) => gets(`/switch/${f.s}/port/gi1/0/1`, `/node/${f.n}`), expect: [200, U, U, U, U],
    check: async (_r, f) => { expect((await api.get(`/switch/${f.s}/port/gi1/0/1`)).body).to.include({ node: f.n, nic: 'eth0' }); },
  },
  {
    call: 'port_connect_nic, missing switch (admin first)', method: 'POST', path: (f) => `/switch/${f.s}/port/gi1/0/1/connect_nic`,
    body: (f) => ({ node: f.n, nic: 'eth0' }), setup: (f) => f.node({ nics: ['eth0'] }), state: (f) => gets(`/node/${f.n}`), expect: [404, U, U, U, U],
  },
  {
    call: 'port_connect_nic, missing node', method: 'POST', path: (f) => `/switch/${f.s}/port/gi1/0/1/connect_nic`,
    body: (f) => ({ node: f.n, nic: 'eth0' }), setup: (f) => f.sw(['gi1/0/1']), state: (f) => gets(`/switch/${f.s}/port/gi1/0/1`), expect: [404, U, U, U, U],
  },
  {
    call: 'port_connect_nic, port already wired', method: 'POST', path: (f) => `/switch/${f.s}/port/gi1/0/1/connect_nic`,
    body: (f) => ({ node: f.n, nic: 'eth1' }),
    setup: async (f) => { await f.sw(['gi1/0/1']); await f.node({ nics: ['eth0', 'eth1'] }); await f.wire('gi1/0/1', 'eth0'); },
    state: (f) => gets(`/switch/${f.s}/port/gi1/0/1`, `/node/${f.n}`), expect: [409, U, U, U, U],
  },
  {
    call: 'port_detach_nic (free node)', method: 'POST', path: (f) => `/switch/${f.s}/port/gi1/0/1/detach_nic`,
    setup: async (f) => { await f.sw(['gi1/0/1']); await f.node({ nics: ['eth0'] }); await f.wire('gi1/0/1', 'eth0'); },
    state: (f) => gets(`/switch/${f.s}/port/gi1/0/1`, `/node/${f.n}`), expect: [200, U, U, U, U],
    check: async (_r, f) => { expect((await api.get(`/switch/${f.s}/port/gi1/0/1`)).body).to.deep.equal({}); },
  },
  {
    call: 'port_detach_nic, node in the project (409)', method: 'POST', path: (f) => `/switch/${f.s}/port/gi1/0/1/detach_nic`,
    setup: async (f) => { await f.sw(['gi1/0/1']); await f.node({ nics: ['eth0'] }); await f.wire('gi1/0/1', 'eth0'); await must(api.post(`/project/${f.P}/connect_node`, { node: f.n })); },
    state: (f) => gets(`/switch/${f.s}/port/gi1/0/1`), expect: [409, U, U, U, U],
  },
  {
    call: 'port_detach_nic, unwired port (404)', method: 'POST', path: (f) => `/switch/${f.s}/port/gi1/0/1/detach_nic`,
    setup: (f) => f.sw(['gi1/0/1']), state: (f) => gets(`/switch/${f.s}`, `/switch/${f.s}/port/gi1/0/1`), expect: [404, U, U, U, U],
  },

  // ───────────── networks (§7) ─────────────
  {
    call: 'network_create (P, P, "") by a member of P', method: 'PUT', path: (f) => `/network/${f.w}`, body: (f) => ({ owner: f.P, access: f.P, net_id: '' }),
    state: (f) => gets(`/network/${f.w}`, `/project/${f.P}/networks`), expect: [200, 200, U, U, U],
    check: async (_r, f) => { expect((await api.get(`/network/${f.w}`)).body).to.include({ name: f.w, owner: f.P }); },
  },
  {
    call: 'network_create, name exists (409 before any authorization)', method: 'PUT', path: (f) => `/network/${f.w}`,
    body: (f) => ({ owner: f.P, access: f.P, net_id: '' }), setup: (f) => f.net('admin', ''), state: (f) => gets(`/network/${f.w}`), expect: [409, 409, 409, U, U],
  },
  {
    call: 'network_create (P, P, "3000"): admin 400, others 401', method: 'PUT', path: (f) => `/network/${f.w}`,
    body: (f) => ({ owner: f.P, access: f.P, net_id: '3000' }), state: (f) => gets(`/network/${f.w}`), expect: [400, U, U, U, U],
  },
  {
    call: 'network_create (P, "", ""): admin 400, others 401', method: 'PUT', path: (f) => `/network/${f.w}`,
    body: (f) => ({ owner: f.P, access: '', net_id: '' }), state: (f) => gets(`/network/${f.w}`), expect: [400, U, U, U, U],
  },
  {
    call: 'network_create, owner project missing (404 before auth)', method: 'PUT', path: (f) => `/network/${f.w}`,
    body: (f) => ({ owner: f.Q, access: f.Q, net_id: '' }), state: (f) => gets(`/network/${f.w}`), expect: [404, 404, 404, U, U],
  },
  {
    call: 'network_create (admin, P, "")', method: 'PUT', path: (f) => `/network/${f.w}`, body: (f) => ({ owner: 'admin', access: f.P, net_id: '' }),
    state: (f) => gets(`/network/${f.w}`), expect: [200, U, U, U, U],
  },
  {
    call: 'network_create (admin, "", "3000")', method: 'PUT', path: (f) => `/network/${f.w}`, body: () => ({ owner: 'admin', access: '', net_id: '3000' }),
    state: (f) => gets(`/network/${f.w}`), expect: [200, U, U, U, U],
  },
  {
    call: 'network_create (admin, missing project, ""): admin first', method: 'PUT', path: (f) => `/network/${f.w}`,
    body: (f) => ({ owner: 'admin', access: f.Q, net_id: '' }), state: (f) => gets(`/network/${f.w}`), expect: [404, U, U, U, U],
  },
  {
    call: 'network_delete of a project network', method: 'DELETE', path: (f) => `/network/${f.w}`, setup: (f) => f.net(f.P, f.P),
    state: (f) => gets(`/network/${f.w}`), expect: [200, 200, U, U, U],
  },
  {
    call: 'network_delete of an admin network listing P (admin only)', method: 'DELETE', path: (f) => `/network/${f.w}`, setup: (f) => f.net('admin', f.P),
    state: (f) => gets(`/network/${f.w}`), expect: [200, U, U, U, U],
  },
  {
    call: 'network_delete of a public admin network (admin only)', method: 'DELETE', path: (f) => `/network/${f.w}`, setup: (f) => f.net('admin', ''),
    state: (f) => gets(`/network/${f.w}`), expect: [200, U, U, U, U],
  },
  { call: 'network_delete of a missing network', method: 'DELETE', path: (f) => `/network/${f.w}`, expect: [404, 404, 404, U, U] },
  {
    call: 'show_network of a project network', method: 'GET', path: (f) => `/network/${f.w}`, setup: (f) => f.net(f.P, f.P), expect: [200, 200, U, U, U],
    check: (r, f) => {
      expect(r.body).to.include({ name: f.w, owner: f.P });
      expect(r.body.access).to.deep.equal([f.P]);
      expect(r.body.channels).to.have.length(2).and.to.include('vlan/native');
    },
  },
  {
    call: 'show_network of a public network (any authenticated user)', method: 'GET', path: (f) => `/network/${f.w}`, setup: (f) => f.net('admin', ''),
    expect: [200, 200, 200, U, U],
    check: (r, f) => { expect(r.body).to.include({ name: f.w, owner: 'admin', access: null }); },
  },
  {
    call: 'show_network of an admin network listing P', method: 'GET', path: (f) => `/network/${f.w}`, setup: (f) => f.net('admin', f.P), expect: [200, 200, U, U, U],
    check: (r, f) => { expect(r.body.access).to.deep.equal([f.P]); },
  },
  { call: 'show_network of a missing network', method: 'GET', path: (f) => `/network/${f.w}`, expect: [404, 404, 404, U, U] },
  {
    call: 'list_networks', method: 'GET', path: () => '/networks', setup: (f) => f.net(f.P, f.P), expect: [200, U, U, U, U],
    check: (r, f) => {
      expect(r.body[f.w].projects).to.deep.equal([f.P]);
      expect(r.body[f.w].network_id).to.match(/^[0-9]+$/);
    },
  },
  {
    call: 'list_network_attachments of a project network', method: 'GET', path: (f) => `/network/${f.w}/attachments`, setup: (f) => f.net(f.P, f.P),
    expect: [200, 200, U, U, U], check: (r) => { expect(r.body).to.deep.equal({}); },
  },
  {
    call: 'list_network_attachments of an admin network listing P (admin only)', method: 'GET', path: (f) => `/network/${f.w}/attachments`,
    setup: (f) => f.net('admin', f.P), expect: [200, U, U, U, U],
  },
  {
    call: 'list_network_attachments ?project=P of an admin network listing P', method: 'GET', path: (f) => `/network/${f.w}/attachments?project=${f.P}`,
    setup: (f) => f.net('admin', f.P), expect: [200, 200, U, U, U],
  },
  {
    call: 'list_network_attachments ?project=P of a public network', method: 'GET', path: (f) => `/network/${f.w}/attachments?project=${f.P}`,
    setup: (f) => f.net('admin', ''), expect: [200, U, U, U, U],
  },
  {
    call: 'list_network_attachments ?project=<missing> (404 before auth)', method: 'GET', path: (f) => `/network/${f.w}/attachments?project=${f.Q}`,
    setup: (f) => f.net('admin', f.P), expect: [404, 404, 404, U, U],
  },
  { call: 'list_network_attachments of a missing network', method: 'GET', path: (f) => `/network/${f.w}/attachments`, expect: [404, 404, 404, U, U] },
  {
    call: 'network_grant_project_access on a project network (owner member)', method: 'PUT', path: (f) => `/network/${f.w}/access/${f.Q}`,
    setup: async (f) => { await f.project(f.Q); await f.net(f.P, f.P); }, state: (f) => gets(`/network/${f.w}`), expect: [200, 200, U, U, U],
    check: async (_r, f) => { expect((await api.get(`/network/${f.w}`)).body.access).to.have.members([f.P, f.Q]); },
  },
  {
    call: 'network_grant_project_access to P on an admin network (admin only)', method: 'PUT', path: (f) => `/network/${f.w}/access/${f.P}`,
    setup: async (f) => { await f.project(f.Q); await f.net('admin', f.Q); }, state: (f) => gets(`/network/${f.w}`, `/project/${f.P}/networks`), expect: [200, U, U, U, U],
  },
  {
    call: 'network_grant_project_access, missing project (404 before auth)', method: 'PUT', path: (f) => `/network/${f.w}/access/${f.Q}`,
    setup: (f) => f.net('admin', f.P), state: (f) => gets(`/network/${f.w}`), expect: [404, 404, 404, U, U],
  },
  { call: 'network_grant_project_access, missing network', method: 'PUT', path: (f) => `/network/${f.w}/access/${f.P}`, expect: [404, 404, 404, U, U] },
  {
    call: 'network_grant_project_access, already listed (auth, then 409)', method: 'PUT', path: (f) => `/network/${f.w}/access/${f.P}`,
    setup: (f) => f.net(f.P, f.P), state: (f) => gets(`/network/${f.w}`), expect: [409, 409, U, U, U],
  },
  {
    call: 'network_revoke_project_access of Q on a project network (owner member)', method: 'DELETE', path: (f) => `/network/${f.w}/access/${f.Q}`,
    setup: async (f) => { await f.project(f.Q); await f.net(f.P, f.P); await f.grant(f.Q); }, state: (f) => gets(`/network/${f.w}`), expect: [200, 200, U, U, U],
    check: async (_r, f) => { expect((await api.get(`/network/${f.w}`)).body.access).to.deep.equal([f.P]); },
  },
  {
    call: 'network_revoke_project_access of P on an admin network (the project itself)', method: 'DELETE', path: (f) => `/network/${f.w}/access/${f.P}`,
    setup: async (f) => { await f.project(f.Q); await f.net('admin', f.Q); await f.grant(f.P); }, state: (f) => gets(`/network/${f.w}`), expect: [200, 200, U, U, U],
  },
  {
    call: 'network_revoke_project_access, project not listed (auth, then 404)', method: 'DELETE', path: (f) => `/network/${f.w}/access/${f.Q}`,
    setup: async (f) => { await f.project(f.Q); await f.net(f.P, f.P); }, state: (f) => gets(`/network/${f.w}`), expect: [404, 404, U, U, U],
  },
  {
    call: 'network_revoke_project_access on a public network (no auth step: 404)', method: 'DELETE', path: (f) => `/network/${f.w}/access/${f.P}`,
    setup: (f) => f.net('admin', ''), state: (f) => gets(`/network/${f.w}`), expect: [404, 404, 404, U, U],
  },
  {
    call: 'network_revoke_project_access of the owner (409)', method: 'DELETE', path: (f) => `/network/${f.w}/access/${f.P}`,
    setup: (f) => f.net(f.P, f.P), state: (f) => gets(`/network/${f.w}`), expect: [409, 409, U, U, U],
  },
  {
    call: 'network_revoke_project_access, missing project', method: 'DELETE', path: (f) => `/network/${f.w}/access/${f.Q}`,
    setup: (f) => f.net(f.P, f.P), state: (f) => gets(`/network/${f.w}`), expect: [404, 404, 404, U, U],
  },

  // ───────────── users (§10, §12; admin-only, admin first) ─────────────
  {
    call: 'user_create', method: 'PUT', path: (f) => `/auth/basic/user/${f.u}`, body: () => ({ password: 'new-pw' }),
    state: (f) => abilities([[{ user: f.u, password: 'new-pw' }, '/nodes/all']]), expect: [200, U, U, U, U],
  },
  {
    call: 'user_create, existing user', method: 'PUT', path: (f) => `/auth/basic/user/${f.u}`, body: () => ({ password: 'new-pw', 'is-admin': true }),
    setup: async (f) => { await f.user(); },
    state: (f) => abilities([[{ user: f.u, password: 'u-pw' }, '/nodes/all'], [{ user: f.u, password: 'new-pw' }, '/nodes/all']]), expect: [409, U, U, U, U],
  },
  {
    call: 'user_delete', method: 'DELETE', path: (f) => `/auth/basic/user/${f.u}`, setup: async (f) => { await f.user(); },
    state: (f) => abilities([[{ user: f.u, password: 'u-pw' }, '/nodes/all']]), expect: [200, U, U, U, U],
  },
  { call: 'user_delete, missing user', method: 'DELETE', path: (f) => `/auth/basic/user/${f.u}`, expect: [404, U, U, U, U] },
  {
    call: 'user_add_project', method: 'POST', path: (f) => `/auth/basic/user/${f.u}/add_project`, body: (f) => ({ project: f.P }),
    setup: async (f) => { await f.user(); }, state: (f) => abilities([[{ user: f.u, password: 'u-pw' }, `/project/${f.P}/nodes`]]), expect: [200, U, U, U, U],
  },
  { call: 'user_add_project, missing user', method: 'POST', path: (f) => `/auth/basic/user/${f.u}/add_project`, body: (f) => ({ project: f.P }), expect: [404, U, U, U, U] },
  {
    call: 'user_add_project, missing project', method: 'POST', path: (f) => `/auth/basic/user/${f.u}/add_project`, body: (f) => ({ project: f.Q }),
    setup: async (f) => { await f.user(); }, state: (f) => gets(`/project/${f.Q}/nodes`), expect: [404, U, U, U, U],
  },
  {
    call: 'user_add_project, already a member', method: 'POST', path: (f) => `/auth/basic/user/${f.u}/add_project`, body: (f) => ({ project: f.P }),
    setup: async (f) => { await f.user([f.P]); }, state: (f) => abilities([[{ user: f.u, password: 'u-pw' }, `/project/${f.P}/nodes`]]), expect: [409, U, U, U, U],
  },
  {
    call: 'user_remove_project (the member alice herself)', method: 'POST', path: () => `/auth/basic/user/${ALICE.user}/remove_project`, body: (f) => ({ project: f.P }),
    state: (f) => abilities([[ALICE, `/project/${f.P}/nodes`]]), expect: [200, U, U, U, U],
  },
  {
    call: 'user_remove_project, not a member (404)', method: 'POST', path: (f) => `/auth/basic/user/${f.u}/remove_project`, body: (f) => ({ project: f.P }),
    setup: async (f) => { await f.project(f.Q); await f.user([f.Q]); },
    state: (f) => abilities([[{ user: f.u, password: 'u-pw' }, `/project/${f.Q}/nodes`], [{ user: f.u, password: 'u-pw' }, `/project/${f.P}/nodes`]]), expect: [404, U, U, U, U],
  },
  {
    call: 'user_set_admin (PATCH)', method: 'PATCH', path: (f) => `/auth/basic/user/${f.u}`, body: () => ({ is_admin: true }),
    setup: async (f) => { await f.user([f.P]); }, state: (f) => abilities([[{ user: f.u, password: 'u-pw' }, '/projects']]), expect: [200, U, U, U, U],
  },
  { call: 'user_set_admin, missing user', method: 'PATCH', path: (f) => `/auth/basic/user/${f.u}`, body: () => ({ is_admin: true }), expect: [404, U, U, U, U] },
  {
    call: 'user_set_admin of oneself (admin: 409; others: 401 first)', method: 'PATCH', path: (f) => `/auth/basic/user/${f.self}`,
    body: (f) => ({ is_admin: f.who !== 'admin' }), state: () => abilities([[ADMIN, '/projects'], [ALICE, '/projects'], [BOB, '/projects']]),
    expect: [409, U, U, U, U],
  },

  // ───────────── other calls (§12; admin inspection) ─────────────
  {
    call: 'list_active_extensions', method: 'GET', path: () => '/active_extensions', expect: [200, U, U, U, U],
    check: (r) => { expect(r.body).to.be.an('array').that.includes('hilt.auth.database').and.includes('hilt.switches.mock'); },
  },
  {
    call: 'GET /admin/actors', method: 'GET', path: () => '/admin/actors', expect: [200, U, U, U, U],
    check: (r) => { expect(r.body).to.be.an('object').that.has.any.keys('project', 'node', 'user'); },
  },
  {
    call: 'GET /admin/actors/project/P', method: 'GET', path: (f) => `/admin/actors/project/${f.P}`, expect: [200, U, U, U, U],
    check: (r, f) => { expect(r.body).to.include({ kind: 'project', id: f.P }); },
  },
  {
    call: 'GET /admin/actors/user/alice (no secrets)', method: 'GET', path: () => `/admin/actors/user/${ALICE.user}`, expect: [200, U, U, U, U],
    check: (r) => { expect(r.text).to.not.include('scrypt$'); },
  },
  { call: 'GET /admin/actors/project/<missing> (admin first)', method: 'GET', path: (f) => `/admin/actors/project/${f.Q}`, expect: [404, U, U, U, U] },
  { call: 'GET /admin/actors/<unknown kind>/x (admin first)', method: 'GET', path: () => '/admin/actors/nokind/x', expect: [404, U, U, U, U] },
  {
    call: 'GET /admin/actors/project/P/journal', method: 'GET', path: (f) => `/admin/actors/project/${f.P}/journal`, expect: [200, U, U, U, U],
    check: (r) => {
      expect(r.body).to.be.an('array').that.is.not.empty;
      expect(r.body[0].by).to.equal(ADMIN.user);
    },
  },
  { call: 'GET /admin/actors/project/<missing>/journal (admin first)', method: 'GET', path: (f) => `/admin/actors/project/${f.Q}/journal`, expect: [404, U, U, U, U] },

  // ───────────── the /v0 prefix (§11) has the same authorization ─────────────
  {
    call: '/v0 project_connect_node', method: 'POST', path: (f) => `/v0/project/${f.P}/connect_node`, body: (f) => ({ node: f.n }),
    setup: (f) => f.node(), state: (f) => gets(`/node/${f.n}`), expect: [200, 200, U, U, U],
  },
  { call: '/v0 show_node of a node of the project', method: 'GET', path: (f) => `/v0/node/${f.n}`, setup: (f) => f.node({ project: f.P }), expect: [200, 200, U, U, U] },
  { call: '/v0 list_projects', method: 'GET', path: () => '/v0/projects', expect: [200, U, U, U, U] },

  // ───────────── §2: a bad request is 400 before authentication, for every caller ─────────────
  {
    call: 'node_register without obm (400 for everyone)', method: 'PUT', path: (f) => `/node/${f.n}`, body: () => ({}),
    state: (f) => gets(`/node/${f.n}`), expect: [400, 400, 400, 400, 400],
  },
  {
    call: 'project_connect_node with a non-JSON body', method: 'POST', path: (f) => `/project/${f.P}/connect_node`, raw: 'node=x',
    setup: (f) => f.node(), state: (f) => gets(`/node/${f.n}`), expect: [400, 400, 400, 400, 400],
  },
  {
    call: 'project_connect_node with a JSON array body', method: 'POST', path: (f) => `/project/${f.P}/connect_node`, raw: '["x"]',
    setup: (f) => f.node(), state: (f) => gets(`/node/${f.n}`), expect: [400, 400, 400, 400, 400],
  },
  {
    call: 'project_connect_node with a key repeating the path parameter', method: 'POST', path: (f) => `/project/${f.P}/connect_node`,
    body: (f) => ({ node: f.n, project: f.P }), setup: (f) => f.node(), state: (f) => gets(`/node/${f.n}`), expect: [400, 400, 400, 400, 400],
  },
  {
    call: 'project_connect_node of a missing project with a bad body (400 before 404)', method: 'POST', path: (f) => `/project/${f.Q}/connect_node`,
    body: () => ({ node: 1 }), expect: [400, 400, 400, 400, 400],
  },
  {
    call: 'project_delete with a body', method: 'DELETE', path: (f) => `/project/${f.P}`, body: () => ({ force: true }),
    state: () => gets('/projects'), expect: [400, 400, 400, 400, 400],
  },
  {
    call: 'network_create without net_id', method: 'PUT', path: (f) => `/network/${f.w}`, body: (f) => ({ owner: f.P, access: f.P }),
    state: (f) => gets(`/network/${f.w}`), expect: [400, 400, 400, 400, 400],
  },
  {
    call: 'network_create with net_id null', method: 'PUT', path: (f) => `/network/${f.w}`, body: (f) => ({ owner: f.P, access: f.P, net_id: null }),
    state: (f) => gets(`/network/${f.w}`), expect: [400, 400, 400, 400, 400],
  },
  { call: 'show_node with a GET body', method: 'GET', path: (f) => `/node/${f.n}`, raw: '{}', setup: (f) => f.node(), expect: [400, 400, 400, 400, 400] },
  { call: 'list_nodes with an unknown query parameter', method: 'GET', path: () => '/nodes/all?x=1', expect: [400, 400, 400, 400, 400] },
  {
    call: 'list_network_attachments with ?project= (empty)', method: 'GET', path: (f) => `/network/${f.w}/attachments?project=`,
    setup: (f) => f.net(f.P, f.P), expect: [400, 400, 400, 400, 400],
  },
  {
    call: 'node_power_cycle with force "yes"', method: 'POST', path: (f) => `/node/${f.n}/power_cycle`, body: () => ({ force: 'yes' }),
    setup: (f) => f.node({ project: f.P }), state: bmcState, expect: [400, 400, 400, 400, 400],
  },
  {
    call: 'node_set_bootdev with bootdev 1', method: 'PUT', path: (f) => `/node/${f.n}/boot_device`, body: () => ({ bootdev: 1 }),
    setup: (f) => f.node({ project: f.P }), state: bmcState, expect: [400, 400, 400, 400, 400],
  },
  {
    call: 'node_power_on with a body', method: 'POST', path: (f) => `/node/${f.n}/power_on`, body: () => ({ force: true }),
    setup: (f) => f.node({ project: f.P }), state: bmcState, expect: [400, 400, 400, 400, 400],
  },
  {
    call: 'user_set_admin with is_admin "yes"', method: 'PATCH', path: (f) => `/auth/basic/user/${f.u}`, body: () => ({ is_admin: 'yes' }),
    setup: async (f) => { await f.user(); }, state: (f) => abilities([[{ user: f.u, password: 'u-pw' }, '/projects']]), expect: [400, 400, 400, 400, 400],
  },
  {
    call: 'user_create with is-admin "yes"', method: 'PUT', path: (f) => `/auth/basic/user/${f.u}`, body: () => ({ password: 'pw', 'is-admin': 'yes' }),
    state: (f) => abilities([[{ user: f.u, password: 'pw' }, '/nodes/all']]), expect: [400, 400, 400, 400, 400],
  },
  {
    call: 'user_create with both is-admin and is_admin (§12: 400)', method: 'PUT', path: (f) => `/auth/basic/user/${f.u}`,
    body: () => ({ password: 'pw', 'is-admin': true, is_admin: true }),
    state: (f) => abilities([[{ user: f.u, password: 'pw' }, '/nodes/all']]), expect: [400, 400, 400, 400, 400],
  },
  {
    call: 'port_connect_nic without nic', method: 'POST', path: (f) => `/switch/${f.s}/port/gi1/0/1/connect_nic`, body: (f) => ({ node: f.n }),
    setup: async (f) => { await f.sw(['gi1/0/1']); await f.node({ nics: ['eth0'] }); },
    state: (f) => gets(`/switch/${f.s}/port/gi1/0/1`), expect: [400, 400, 400, 400, 400],
  },
  {
    call: 'port_detach_nic with a body', method: 'POST', path: (f) => `/switch/${f.s}/port/gi1/0/1/detach_nic`, body: (f) => ({ node: f.n }),
    setup: async (f) => { await f.sw(['gi1/0/1']); await f.node({ nics: ['eth0'] }); await f.wire('gi1/0/1', 'eth0'); },
    state: (f) => gets(`/switch/${f.s}/port/gi1/0/1`), expect: [400, 400, 400, 400, 400],
  },
];

function expectErrorBody(r: Res, status: number): void {
  expect(r.body, `error body of ${status}: ${r.text}`).to.be.an('object');
  expect(r.body.type).to.be.a('string').that.is.not.empty;
  expect(r.body.msg).to.be.a('string').that.is.not.empty;
  if (status === 401) expect(r.body.type).to.equal('AuthorizationError');
  if (status === 400) expect(r.body.type).to.equal('BadArgumentError');
}

describe('authorization matrix (docs/api-conventions.md §1-§3 and per-call orders)', function () {
  this.timeout(60_000);

  before(async () => {
    ts = await startTestServer({ headnodeDriver: 'mock' });
    api = ts.api;
    await must(api.put(`/project/${OTHER_PROJECT}`));
    await makeUser(api, ALICE.user, ALICE.password);
    await makeUser(api, BOB.user, BOB.password, [OTHER_PROJECT]);
  });

  it('the callers are who the matrix says they are', async () => {
    expect((await api.get('/projects')).status).to.equal(200);
    expect((await api.with(ALICE).get('/nodes/all')).status).to.equal(200);
    expect((await api.with(ALICE).get('/projects')).status).to.equal(401);
    expect((await api.with(BOB).get(`/project/${OTHER_PROJECT}/nodes`)).status).to.equal(200);
    expect((await api.with(CREDS.badpw).get('/nodes/all')).status).to.equal(401);
    expect((await api.with(null).get('/nodes/all')).status).to.equal(401);
  });

  // §1: other ways of not being authenticated are 401 too (HIL gave 404 for an unknown user).
  it('an unknown user, a non-Basic scheme, bad base64 or no ":" get 401 AuthorizationError, even on calls open to any user', async () => {
    await must(api.put('/node/auth-free', { obm: obm() }));
    const headers = [
      'Basic ' + Buffer.from('nobody:whatever').toString('base64'),
      'Bearer ' + Buffer.from(`${ADMIN.user}:${ADMIN.password}`).toString('base64'),
      'Basic !!!not-base64!!!',
      'Basic ' + Buffer.from(`${ADMIN.user}${ADMIN.password}`).toString('base64'),
      'Basic ' + Buffer.from([0xff, 0xfe, 0x3a, 0x41]).toString('base64'),
    ];
    for (const authorization of headers) {
      for (const [method, path, body] of [['GET', '/nodes/all'], ['GET', '/node/auth-free'], ['POST', `/project/${OTHER_PROJECT}/connect_node`, { node: 'auth-free' }]] as const) {
        const r = await api.call(method, path, { as: null, headers: { authorization }, ...(body ? { body } : {}) });
        expect(r.status, `${method} ${path} with ${authorization}`).to.equal(401);
        expectErrorBody(r, 401);
      }
    }
    expect((await api.get('/node/auth-free')).body.project).to.equal(null);
  });

  ROWS.forEach((row, i) => {
    describe(`${row.method} ${row.call}`, () => {
      CALLERS.forEach((who, k) => {
        const want = row.expect[k];
        it(`${who} → ${want}`, async () => {
          const f = new Fx(`${i}${TAG[who]}`, who);
          await must(api.put(`/project/${f.P}`));
          await must(api.post(`/auth/basic/user/${ALICE.user}/add_project`, { project: f.P }));
          if (row.setup) await row.setup(f);
          const before = row.state ? await row.state(f) : undefined;

          const r = await api.call(row.method, row.path(f), {
            as: CREDS[who],
            ...(row.raw !== undefined ? { raw: row.raw } : row.body ? { body: row.body(f) } : {}),
          });
          expect(r.status, `${row.method} ${row.path(f)} as ${who}: ${r.text}`).to.equal(want);

          if (want >= 400) expectErrorBody(r, want);
          else if (row.check) await row.check(r, f);

          if (row.state) {
            const after = await row.state(f);
            if (want >= 400) expect(after, 'a refused call must not change anything').to.deep.equal(before);
            else expect(after, 'a successful call must change the state').to.not.deep.equal(before);
          }
        });
      });
    });
  });
});
