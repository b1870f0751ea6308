/**
 * The build a checkpoint is written by (actors/checkpoint.ts, currentBuild): a hash of the code
 * that decides its states, each kind's apply and the checkpoint's encoding, and what they
 * require of the project, with the version of msgpackr. A change elsewhere (a decision, a route) keeps the checkpoint usable;
 * a change to an apply or to anything it requires does not.
 */
import { expect } from 'chai';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { buildOf, codeHash, currentBuild, msgpackrVersion, requiredModules } from '../../actors/checkpoint';
import { readModelKinds } from '../../actors/readmodel-kinds';
import { testWorld } from '../helpers/world';
import { applyHeadnode } from '../../actors/headnode/state';
import { applyNetwork } from '../../actors/network/state';
import { applyNic } from '../../actors/nic/state';
import { applyNode } from '../../actors/node/state';
import { applyPort } from '../../actors/port/state';
import { applyProject } from '../../actors/project/state';
import { applySwitch } from '../../actors/switch/state';
import { applyUser } from '../../actors/user/state';
import { applyWebhook } from '../../actors/webhook/state';

/** The compiled actors: test/actors/ is dist/test/actors/ once compiled. */
const ACTORS = join(__dirname, '..', '..', 'actors');

/** The roots currentBuild hashes, in a copy of the compiled actors at `dir`. */
function rootsIn(dir: string): string[] {
  const roots = [join(dir, 'checkpoint.js'), join(dir, 'readmodel-kinds.js')];
  for (const name of readdirSync(dir).sort()) if (existsSync(join(dir, name, 'state.js'))) roots.push(join(dir, name, 'state.js'));
  return roots;
}

describe('The build that names a checkpoint', () => {
  const dirs: string[] = [];
  const tempDir = () => {
    const d = mkdtempSync(join(tmpdir(), 'hilt-build-'));
    dirs.push(d);
    return d;
  };
  after(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it('hashes every kind\'s apply and the checkpoint\'s encoding, and none of the decisions, the read model\'s indexes or the runtime', () => {
    const named = requiredModules(rootsIn(ACTORS)).map((f) => relative(ACTORS, f));
    for (const kind of ['headnode', 'network', 'nic', 'node', 'port', 'project', 'switch', 'user', 'webhook']) expect(named).to.include(`${kind}/state.js`);
    expect(named).to.include.members(['checkpoint.js', 'readmodel-kinds.js', 'ids.js', 'port/protocol.js']);
    for (const f of named) expect(f, f).not.to.match(/(^|\/)(actor|readmodel|runtime|entity|world|recovery)\.js$|^\.\./);
    expect(buildOf(codeHash(rootsIn(ACTORS), dirname(ACTORS)), msgpackrVersion())).to.equal(currentBuild());
  });

  it('moves with the version of msgpackr, which encodes the checkpoint', () => {
    const installed = JSON.parse(readFileSync(join(ACTORS, '..', '..', 'node_modules', 'msgpackr', 'package.json'), 'utf8')).version;
    expect(msgpackrVersion()).to.equal(installed);
    expect(currentBuild(installed)).to.equal(currentBuild());
    const [major, minor, patch] = installed.split('.').map(Number);
    expect(currentBuild(`${major}.${minor}.${patch + 1}`)).not.to.equal(currentBuild());
    expect(currentBuild(`${major + 1}.0.0`)).not.to.equal(currentBuild());
  });

  it('every kind\'s behaviour applies with its state module\'s function, which the hash covers', async () => {
    const t = testWorld();
    const world = t.world;
    const applies = new Map<string, unknown>([
      ['headnode', applyHeadnode], ['network', applyNetwork], ['nic', applyNic], ['node', applyNode], ['port', applyPort],
      ['project', applyProject], ['switch', applySwitch], ['user', applyUser], ['webhook', applyWebhook],
    ]);
    const registries = [world.headnodes, world.networks, world.nics, world.nodes, world.ports, world.projects, world.switches, world.users, world.webhooks];
    expect(registries.map((r) => r.kind).sort()).to.deep.equal([...applies.keys()].sort());
    expect(readModelKinds(world).map((k) => k.kind).sort()).to.deep.equal([...applies.keys()].sort());
    for (const r of registries) expect(r.behavior.apply, r.kind).to.equal(applies.get(r.kind));
    await t.close();
  });

  it('moves with a change to an apply or to a module it requires, not with a change to a decision', () => {
    const dir = join(tempDir(), 'actors');
    cpSync(ACTORS, dir, { recursive: true });
    const hash = () => codeHash(rootsIn(dir), dirname(dir));
    const first = hash();
    const edit = (file: string) => writeFileSync(join(dir, file), `${readFileSync(join(dir, file), 'utf8')}\n// changed\n`);
    edit('node/actor.js');
    edit('readmodel.js');
    edit('runtime.js');
    expect(hash()).to.equal(first);
    edit('nic/state.js');
    const second = hash();
    expect(second).not.to.equal(first);
    edit('ids.js');
    expect(hash()).not.to.equal(second);
  });

  it('follows requires transitively, through folders and cycles, and not into packages', () => {
    const dir = tempDir();
    const put = (file: string, text: string) => {
      mkdirSync(dirname(join(dir, file)), { recursive: true });
      writeFileSync(join(dir, file), text);
    };
    put('a.js', 'require("./b"); require("msgpackr"); require("./missing");');
    put('b.js', 'require("../' + dir.split('/').pop() + '/lib"); require("./a");');
    put('lib/index.js', 'require("./c.js");');
    put('lib/c.js', '');
    put('unrelated.js', '');
    const named = requiredModules([join(dir, 'a.js')]).map((f) => relative(dir, f));
    expect(named).to.deep.equal(['a.js', 'b.js', 'lib/c.js', 'lib/index.js', 'missing']);
    const first = codeHash([join(dir, 'a.js')], dir);
    put('unrelated.js', 'x');
    expect(codeHash([join(dir, 'a.js')], dir)).to.equal(first);
    put('lib/c.js', 'x');
    expect(codeHash([join(dir, 'a.js')], dir)).not.to.equal(first);
  });
});
