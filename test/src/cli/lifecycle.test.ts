/** hilt node lease …, hilt project lease|quota …, hilt admin maintenance|attention against a started server. */
import { expect } from 'chai';
import { startTestServer, stopTestServer, TestServer, Client, must, makeNode, makeUser } from '../../helpers/server';
import { cliFor, rows } from '../../helpers/cli';
import { leaseEnd, timeLeft } from '../../../src/cli/commands/lifecycle';

describe('hilt lifecycle commands', function () {
  this.timeout(60_000);
  let ts: TestServer;
  let api: Client;
  let cli: ReturnType<typeof cliFor>;
  before(async () => {
    ts = await startTestServer();
    api = ts.api;
    cli = cliFor(ts.url);
    await must(api.put('/project/cp'));
    await makeNode(api, 'c1');
    await must(api.post('/project/cp/connect_node', { node: 'c1' }));
  });
  after(() => stopTestServer(ts));

  it('reads lease times as RFC 3339 or +<n>m|h|d, and says what is left', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(leaseEnd('+2d', now)).to.equal('2026-01-03T00:00:00.000Z');
    expect(leaseEnd('+90m', now)).to.equal('2026-01-01T01:30:00.000Z');
    expect(leaseEnd('2026-02-01T00:00:00+01:00')).to.equal('2026-02-01T00:00:00+01:00');
    expect(() => leaseEnd('tomorrow')).to.throw(/RFC 3339/);
    expect(timeLeft('2026-01-03T04:00:00Z', now)).to.equal('2d 4h');
    expect(timeLeft('2026-01-01T00:45:00Z', now)).to.equal('45m');
    expect(timeLeft('2025-12-31T00:00:00Z', now)).to.equal('passed');
    // Seconds round up to a whole minute before it is split: never `60m`, `1h 60m`.
    expect(timeLeft('2026-01-01T00:59:30Z', now)).to.equal('1h 0m');
    expect(timeLeft('2026-01-01T01:59:30Z', now)).to.equal('2h 0m');
    expect(timeLeft('2026-01-01T00:00:30Z', now)).to.equal('1m');
  });

  it('node lease set, show, delete; project lease list', async () => {
    expect(await cli.ok('node', 'lease', 'set', 'c1', '+3d')).to.equal('');
    const shown = await cli.json('node', 'lease', 'show', 'c1');
    expect(shown.project).to.equal('cp');
    expect(Date.parse(shown.expires_at) - Date.now()).to.be.within(3 * 86_400_000 - 60_000, 3 * 86_400_000);
    const t = rows(await cli.ok('node', 'lease', 'show', 'c1'));
    expect(t).to.deep.include(['Project', 'cp']);
    expect(t.find((r) => r[0] === 'Left')![1]).to.match(/^2d 23h|^3d 0h/);
    expect(rows(await cli.ok('project', 'lease', 'list', 'cp'))[1][0]).to.equal('c1');
    expect(await cli.ok('node', 'lease', 'delete', 'c1')).to.equal('');
    const gone = await cli.run('node', 'lease', 'show', 'c1');
    expect(gone.code).to.equal(1);
    expect(gone.stderr).to.match(/NotFoundError/);
    const bad = await cli.run('node', 'lease', 'set', 'c1', 'soon');
    expect(bad.code).to.equal(2);
  });

  it('project quota set, show; a member is refused the set', async () => {
    expect(await cli.ok('project', 'quota', 'set', 'cp', '--nodes', '4')).to.equal('');
    expect(await cli.json('project', 'quota', 'show', 'cp')).to.deep.equal({ nodes: { limit: 4, used: 1 }, networks: { limit: null, used: 0 }, headnodes: { limit: null, used: 0 } });
    await cli.ok('project', 'quota', 'set', 'cp', '--nodes', 'none', '--networks', '2', '--headnodes', '1');
    await must(api.put('/headnode/cp-h', { project: 'cp', base_img: 'base-headnode' }));
    expect(rows(await cli.ok('project', 'quota', 'show', 'cp')).slice(1)).to.deep.equal([['Nodes', 'none', '1'], ['Networks', '2', '0'], ['Headnodes', '1', '1']]);
    expect((await api.put('/headnode/cp-h2', { project: 'cp', base_img: 'base-headnode' })).body.msg).to.equal('project cp has reached its quota of 1 headnode');
    expect(await cli.ok('project', 'quota', 'set', 'cp', '--headnodes', 'none')).to.equal('');
    expect((await cli.json('project', 'quota', 'show', 'cp')).headnodes).to.deep.equal({ limit: null, used: 1 });
    expect((await cli.run('project', 'quota', 'set', 'cp', '--headnodes', 'many')).code).to.equal(2);
    expect((await cli.run('project', 'quota', 'set', 'cp')).code).to.equal(2);
    const member = await makeUser(api, 'cp-member', 'cp-member-pw', ['cp']);
    const refused = await cli.as({ as: member })('project', 'quota', 'set', 'cp', '--nodes', '9');
    expect(refused.code).to.equal(1);
    expect(refused.stderr).to.match(/AuthorizationError/);
  });

  it('admin maintenance and admin attention', async () => {
    expect(await cli.json('admin', 'maintenance')).to.deep.equal([]);
    expect(await cli.json('admin', 'attention')).to.deep.equal([]);
    expect(rows(await cli.ok('admin', 'attention'))[0]).to.deep.equal(['Node', 'Problem', 'Since', 'Detail']);
    expect(rows(await cli.ok('admin', 'maintenance'))[0]).to.deep.equal(['Node', 'From', 'Since', 'Notice', 'Failed POSTs', 'Last Error']);
  });
});
