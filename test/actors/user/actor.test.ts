/**
 * The user actor (actors/user/actor.ts), through the actor world, without HTTP: its account, its
 * admin flag and its memberships, which only the project actor changes (project → user).
 */
import { expect } from 'chai';
import { HiltError } from '../../../actors/errors';
import { World } from '../../../actors/world';
import type { UserCommand } from '../../../actors/user/protocol';
import { testWorld, TestWorld } from '../../helpers/world';

const by = 'admin';
const refusal = (p: Promise<unknown>) => p.then(() => { throw new Error('expected a refusal'); }, (e: HiltError) => e);

describe('UserActor (accounts and memberships, without HTTP)', () => {
  let t: TestWorld;
  let world: World;
  beforeEach(async () => {
    t = testWorld();
    world = t.world;
    for (const p of ['p', 'q']) await world.projects.ask(p, { type: 'project.create', by });
  });
  afterEach(() => t.close());

  const ask = (user: string, cmd: UserCommand) => world.users.ask(user, cmd);
  const create = (user: string, isAdmin = false) => ask(user, { type: 'user.create', by, passwordHash: `hash-${user}`, isAdmin });
  const join = (user: string, project: string) => world.projects.ask(project, { type: 'project.addUser', by, user });
  const leave = (user: string, project: string) => world.projects.ask(project, { type: 'project.removeUser', by, user });
  /** How many events the user's journal holds (0: none ever). */
  const stored = async (user: string) => (await world.users.inspect(user))?.sequenceNumber ?? 0;

  it('is created once, deleted once, and created again from nothing', async () => {
    await create('u', true);
    expect(world.rm.users.get('u')).to.deep.equal({ name: 'u', passwordHash: 'hash-u', isAdmin: true, projects: [] });
    const dup = await refusal(create('u'));
    expect([dup.type, dup.message]).to.deep.equal(['DuplicateError', 'user u already exists']);
    expect(world.rm.users.get('u')!.passwordHash).to.equal('hash-u');
    await join('u', 'p');
    await ask('u', { type: 'user.delete', by });
    expect(world.rm.users.has('u')).to.equal(false);
    expect(world.rm.membersByProject.has('p')).to.equal(false);
    expect((await refusal(ask('u', { type: 'user.delete', by }))).type).to.equal('NotFoundError');
    await create('u');
    expect(world.rm.users.get('u')).to.deep.equal({ name: 'u', passwordHash: 'hash-u', isAdmin: false, projects: [] });
  });

  it('sets its admin flag, which opens every project to it', async () => {
    await create('u');
    expect(world.rm.canAccessProject('u', 'p')).to.equal(false);
    await ask('u', { type: 'user.setAdmin', by, isAdmin: true });
    expect(world.rm.users.get('u')!.isAdmin).to.equal(true);
    expect(world.rm.canAccessProject('u', 'p')).to.equal(true);
    await ask('u', { type: 'user.setAdmin', by, isAdmin: false });
    expect(world.rm.canAccessProject('u', 'p')).to.equal(false);
    expect((await refusal(ask('ghost', { type: 'user.setAdmin', by, isAdmin: true }))).type).to.equal('NotFoundError');
    expect(await stored('ghost')).to.equal(0);
  });

  it('joins a project once (a second join is 409) and leaves only a project it is a member of (404)', async () => {
    await create('u');
    await join('u', 'p');
    await join('u', 'q');
    expect(world.rm.users.get('u')!.projects).to.deep.equal(['p', 'q']);
    expect(world.rm.canAccessProject('u', 'q')).to.equal(true);
    const again = await refusal(join('u', 'p'));
    expect([again.type, again.message]).to.deep.equal(['DuplicateError', 'membership of user u in project p already exists']);
    await leave('u', 'p');
    expect(world.rm.users.get('u')!.projects).to.deep.equal(['q']);
    expect(world.rm.membersByProject.has('p')).to.equal(false);
    const gone = await refusal(leave('u', 'p'));
    expect([gone.type, gone.message]).to.deep.equal(['NotFoundError', 'membership of user u in project p does not exist']);
    expect((await refusal(join('ghost', 'p'))).type).to.equal('NotFoundError');
    expect((await refusal(leave('ghost', 'p'))).type).to.equal('NotFoundError');
  });

  it('tolerates a leave `ifMember` of a user that is no member, or no user: nothing recorded', async () => {
    await create('u');
    const before = await stored('u');
    await ask('u', { type: 'user.leave', by, project: 'p', ifMember: true });
    expect(await stored('u')).to.equal(before);
    await ask('ghost', { type: 'user.leave', by, project: 'p', ifMember: true });
    expect(await stored('ghost')).to.equal(0);
    expect(world.rm.users.has('ghost')).to.equal(false);
  });

  it('may be deleted while project_delete removes the members: the delete still completes', async () => {
    for (const u of ['u1', 'u2']) {
      await create(u);
      await join(u, 'p');
    }
    await join('u2', 'q');
    // project_delete is removing u1 (held in its commit) and will then remove u2, deleted meanwhile.
    const gate = t.hold('user:u1');
    const deleting = world.projects.ask('p', { type: 'project.delete', by });
    await gate.waiting;
    await ask('u2', { type: 'user.delete', by });
    gate.release();
    await deleting;
    expect(world.rm.projects.has('p')).to.equal(false);
    expect(world.rm.users.get('u1')!.projects).to.deep.equal([]);
    expect(world.rm.users.has('u2')).to.equal(false);
    expect(world.rm.membersByProject.has('p')).to.equal(false);
    expect([...world.rm.membersByProject.get('q')]).to.deep.equal([]);
  });

  it('wakes from storage with the state it had (its actor put to sleep)', async () => {
    await create('u', true);
    await join('u', 'q');
    const before = world.rm.users.get('u');
    await world.runtime.sweep(Date.now() + 1e9, 0);
    expect(world.users.isLive('u')).to.equal(false);
    await join('u', 'p');
    expect(world.rm.users.get('u')).to.deep.equal({ ...before, projects: ['q', 'p'] });
  });
});
