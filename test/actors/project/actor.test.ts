/**
 * The project actor (actors/project/actor.ts), through the actor world, without HTTP. The project
 * is first in the ask order: whatever makes something refer to it passes its mailbox, so its
 * delete sees every such reference.
 */
import { expect } from 'chai';
import { HiltError } from '../../../actors/errors';
import { World } from '../../../actors/world';
import type { ProjectCommand } from '../../../actors/project/protocol';
import { testWorld, wiredNode, TestWorld } from '../../helpers/world';

const by = 'admin';
const refusal = (p: Promise<unknown>) => p.then(() => { throw new Error('expected a refusal'); }, (e: HiltError) => e);
const obm = { type: 'mock', fields: { host: 'h', user: 'u', password: 'p' } };

describe('ProjectActor (project → node, network, user, headnode; without HTTP)', () => {
  let t: TestWorld;
  let world: World;
  beforeEach(() => {
    t = testWorld();
    world = t.world;
  });
  afterEach(() => t.close());

  const ask = (project: string, cmd: ProjectCommand) => world.projects.ask(project, cmd);
  const del = (project: string) => ask(project, { type: 'project.delete', by });
  const join = (user: string, project: string) => ask(project, { type: 'project.addUser', by, user });
  const newUser = (user: string) => world.users.ask(user, { type: 'user.create', by, passwordHash: 'x', isAdmin: false });

  it('is created once; deleting a missing project is 409 IllegalStateError, any other call on it 404', async () => {
    await ask('p', { type: 'project.create', by });
    expect(world.rm.projects.get('p')).to.deep.equal({ name: 'p' });
    expect((await refusal(ask('p', { type: 'project.create', by }))).type).to.equal('DuplicateError');
    const missing = await refusal(del('ghost'));
    expect([missing.type, missing.message]).to.deep.equal(['IllegalStateError', 'project ghost does not exist']);
    expect((await refusal(ask('ghost', { type: 'project.connectNode', by, node: 'n' }))).type).to.equal('NotFoundError');
    expect((await refusal(join('u', 'ghost'))).type).to.equal('NotFoundError');
    await del('p');
    expect(world.rm.projects.has('p')).to.equal(false);
    expect((await refusal(del('p'))).type).to.equal('IllegalStateError');
    await ask('p', { type: 'project.create', by }); // the name is free again
  });

  it('refuses its delete while it holds nodes, owns networks, has access to networks or has headnodes, and keeps its members then', async () => {
    await wiredNode(world); // p holds n1 and owns w1, w2
    await newUser('u');
    await join('u', 'p');
    const refused = async (message: string) => {
      const err = await refusal(del('p'));
      expect([err.type, err.message]).to.deep.equal(['BlockedError', message]);
      expect(world.rm.projects.has('p')).to.equal(true);
      expect(world.rm.users.get('u')!.projects).to.deep.equal(['p']);
    };
    await refused('project p still has nodes');
    await ask('p', { type: 'project.detachNode', by, node: 'n1' });
    await refused('project p still owns networks');
    for (const w of ['w1', 'w2']) await world.networks.ask(w, { type: 'network.delete', by });
    await world.networks.ask('shared', { type: 'network.create', by, spec: { owner: 'admin', access: ['q'], vlan: null } });
    await ask('p', { type: 'project.grantNetwork', by, network: 'shared' });
    await refused('project p still has access to networks');
    await world.networks.ask('shared', { type: 'network.revoke', by, project: 'p' });
    await ask('p', { type: 'project.createHeadnode', by, headnode: 'h', baseImg: 'img' });
    await refused('project p still has headnodes');
    await world.headnodes.ask('h', { type: 'headnode.beginDelete', by });
    await world.headnodes.ask('h', { type: 'headnode.endDelete', by, error: null });
    await del('p');
    expect(world.rm.projects.has('p')).to.equal(false);
  });

  it('removes its memberships when deleted, in the users\' own state as in the index', async () => {
    await ask('p', { type: 'project.create', by });
    await ask('q', { type: 'project.create', by });
    for (const u of ['u1', 'u2']) {
      await newUser(u);
      await join(u, 'p');
    }
    await join('u1', 'q');
    await del('p');
    expect(world.rm.membersByProject.has('p')).to.equal(false);
    expect(world.rm.users.get('u1')!.projects).to.deep.equal(['q']);
    expect(world.rm.users.get('u2')!.projects).to.deep.equal([]);
    expect((await world.users.inspect('u2'))!.state).to.include({ name: 'u2' }).and.to.have.property('projects').that.deep.equals([]);
    expect([...world.rm.membersByProject.get('q')]).to.deep.equal(['u1']);
  });

  it('counts its nodes and owned networks against its quota in its mailbox: of racing reservations only those within it pass', async () => {
    await ask('r', { type: 'project.create', by });
    await ask('r', { type: 'project.setQuota', by, nodes: 2, networks: 1 });
    const nodes = ['n1', 'n2', 'n3', 'n4'];
    for (const n of nodes) await world.nodes.ask(n, { type: 'node.register', by, obm });
    // The first one's commit held: the others wait behind it in the project's mailbox, not beside it.
    const gate = t.hold('node:');
    const racing = Promise.all(nodes.map((node) => ask('r', { type: 'project.connectNode', by, node }).then(() => 'ok', (e: HiltError) => e.message)));
    await gate.waiting;
    gate.release();
    const outcomes = await racing;
    expect(outcomes.sort()).to.deep.equal(['ok', 'ok', 'project r has reached its quota of 2 nodes', 'project r has reached its quota of 2 nodes']);
    expect(world.rm.nodesByProject.get('r').size).to.equal(2);
    const net = (network: string, owner: string) => ask('r', { type: 'project.createNetwork', by, network, spec: { owner, access: ['r'], vlan: null } });
    await net('x', 'r');
    expect((await refusal(net('y', 'r'))).message).to.equal('project r has reached its quota of 1 network');
    await net('z', 'admin'); // not its own: not counted
    await ask('r', { type: 'project.setQuota', by, nodes: 1 }); // lowered: evicts nothing
    expect(world.rm.nodesByProject.get('r').size).to.equal(2);
    await ask('r', { type: 'project.setQuota', by, nodes: null });
    expect(world.rm.projects.get('r')).to.deep.equal({ name: 'r', quota: { networks: 1 } });
    for (const node of nodes.filter((n) => world.rm.freeNodes.has(n))) await ask('r', { type: 'project.connectNode', by, node });
    expect(world.rm.nodesByProject.get('r').size).to.equal(4);
  });

  it('holds its quota against a node that another project releases at the same moment (the node decides whether it is free)', async () => {
    for (const p of ['p', 'r']) await ask(p, { type: 'project.create', by });
    await ask('r', { type: 'project.setQuota', by, nodes: 1 });
    for (const n of ['n0', 'n1']) await world.nodes.ask(n, { type: 'node.register', by, obm });
    await ask('r', { type: 'project.connectNode', by, node: 'n0' });
    await ask('p', { type: 'project.connectNode', by, node: 'n1' });
    // p's release of n1 is committing while r reserves it: r sees n1 in p, the node sees it free.
    const gate = t.hold('node:n1');
    const releasing = ask('p', { type: 'project.detachNode', by, node: 'n1' });
    await gate.waiting;
    const reserving = ask('r', { type: 'project.connectNode', by, node: 'n1' }).then(() => 'ok', (e: HiltError) => e.message);
    gate.release();
    await releasing;
    expect(await reserving).to.equal('project r has reached its quota of 1 node');
    expect([...world.rm.nodesByProject.get('r')]).to.deep.equal(['n0']);
    expect(world.rm.freeNodes.has('n1')).to.equal(true);
    // A node that is not free still gets its own 409 first.
    await ask('p', { type: 'project.connectNode', by, node: 'n1' });
    expect((await refusal(ask('r', { type: 'project.connectNode', by, node: 'n1' }))).message).to.equal('node n1 is not free');
  });

  it('releases a node into the maintenance pool\'s project, which cannot be deleted; a release from the pool frees the node', async () => {
    const pool = testWorld({ release: { maintenanceProject: 'm', powerOff: false } });
    const w = pool.world;
    try {
      for (const p of ['p', 'm']) await w.projects.ask(p, { type: 'project.create', by });
      await w.nodes.ask('n1', { type: 'node.register', by, obm });
      await w.projects.ask('p', { type: 'project.connectNode', by, node: 'n1' });
      await w.projects.ask('p', { type: 'project.detachNode', by, node: 'n1' });
      expect(w.rm.nodes.get('n1')).to.include({ project: 'm' }).and.to.have.nested.property('maintenance.from', 'p');
      expect(w.rm.freeNodes.has('n1')).to.equal(false);
      expect((await refusal(w.projects.ask('m', { type: 'project.delete', by }))).message).to.match(/maintenance pool's project/);
      await w.projects.ask('m', { type: 'project.detachNode', by, node: 'n1' });
      expect(w.rm.nodes.get('n1')!.project).to.equal(null);
      expect(w.rm.nodes.get('n1')).to.not.have.property('maintenance');
      expect(w.rm.maintenanceNotices.size).to.equal(0);
    } finally {
      await pool.close();
    }
  });

  /**
   * Each call that makes something refer to project r, the write that commits it, and the
   * reference it leaves. A member does not block a delete: the delete removes it (`removed`).
   */
  const referrers: { name: string; setup: () => Promise<unknown>; writes: string; call: ProjectCommand; refers: () => boolean; removed?: boolean }[] = [
    {
      name: 'connect_node', writes: 'node:n2',
      setup: () => world.nodes.ask('n2', { type: 'node.register', by, obm }),
      call: { type: 'project.connectNode', by, node: 'n2' },
      refers: () => world.rm.nodes.get('n2')!.project === 'r',
    },
    {
      name: 'network_create', writes: 'network:x', setup: async () => undefined,
      call: { type: 'project.createNetwork', by, network: 'x', spec: { owner: 'r', access: ['r'], vlan: null } },
      refers: () => world.rm.networksByOwner.get('r').has('x'),
    },
    {
      name: 'network_grant_project_access', writes: 'network:x',
      setup: () => world.networks.ask('x', { type: 'network.create', by, spec: { owner: 'admin', access: ['q'], vlan: null } }),
      call: { type: 'project.grantNetwork', by, network: 'x' },
      refers: () => world.rm.networksByAccess.get('r').has('x'),
    },
    {
      name: 'project_add_user', writes: 'user:u', setup: () => newUser('u'),
      call: { type: 'project.addUser', by, user: 'u' },
      refers: () => world.rm.membersByProject.get('r').has('u') || world.rm.users.get('u')!.projects.includes('r'),
      removed: true,
    },
    {
      name: 'headnode_create', writes: 'headnode:h', setup: async () => undefined,
      call: { type: 'project.createHeadnode', by, headnode: 'h', baseImg: 'img' },
      refers: () => world.rm.headnodesByProject.get('r').has('h'),
    },
  ];

  for (const r of referrers) {
    const behind = r.removed ? 'removes what it made' : 'is refused';
    it(`serializes ${r.name} with project_delete: a delete behind it ${behind}, one ahead of it refuses it`, async () => {
      await r.setup();
      await ask('r', { type: 'project.create', by });
      // The call is half-way (its commit below held); the delete waits behind it and sees what it made.
      let gate = t.hold(r.writes);
      const call = ask('r', r.call);
      await gate.waiting;
      const late = del('r').then(() => null, (e: HiltError) => e.type);
      gate.release();
      await call;
      expect(await late).to.equal(r.removed ? null : 'BlockedError');
      expect(world.rm.projects.has('r')).to.equal(!r.removed);
      expect(r.refers()).to.equal(!r.removed); // never a reference to a deleted project

      // Again on a fresh project r2 whose delete is half-way: the call behind it finds no project.
      await ask('r2', { type: 'project.create', by });
      gate = t.hold('project:r2');
      const deleting = del('r2');
      await gate.waiting;
      const refused = refusal(ask('r2', r.call));
      gate.release();
      await deleting;
      expect((await refused).type).to.equal('NotFoundError');
      expect(world.rm.projects.has('r2')).to.equal(false);
      expect(world.rm.nodesByProject.has('r2') || world.rm.networksByOwner.has('r2') || world.rm.networksByAccess.has('r2')
        || world.rm.membersByProject.has('r2') || world.rm.headnodesByProject.has('r2')).to.equal(false);
    });
  }
});
