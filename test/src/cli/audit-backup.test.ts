/** hilt admin audit and hilt admin backup against a started server. */
import { expect } from 'chai';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestServer, stopTestServer, TestServer, must, makeUser, mockSwitch } from '../../helpers/server';
import { keyFilePath } from '../../../src/secrets/at-rest';
import { cliFor, rows, hilt } from '../../helpers/cli';

describe('hilt admin audit and hilt admin backup', function () {
  this.timeout(60_000);
  let ts: TestServer;
  let cli: ReturnType<typeof cliFor>;
  let dir: string;
  before(async () => {
    ts = await startTestServer();
    cli = cliFor(ts.url);
    dir = mkdtempSync(join(tmpdir(), 'hilt-cli-backup-'));
    await must(ts.api.put('/project/p1'));
    await makeUser(ts.api, 'dora', 'dora-pw', ['p1']);
    for (let i = 0; i < 5; i++) await must(ts.api.put(`/project/many-${i}`));
  });
  after(async () => {
    await stopTestServer(ts);
    rmSync(dir, { recursive: true, force: true });
  });

  it('audit: the changes newest first, with who, the call and the event; filters; pages with --cursor and --all', async () => {
    const t = rows(await cli.ok('admin', 'audit'));
    expect(t[0]).to.deep.equal(['At', 'By', 'Kind', 'Name', 'Call', 'Event', 'Details']);
    expect(t[1].slice(1, 6)).to.deep.equal(['admin', 'project', 'many-4', 'project_create', 'ProjectCreated']);
    expect(t.map((r) => r.slice(2, 6))).to.deep.include(['user', 'dora', 'user_add_project', 'UserJoined']);
    // A port by its two names, / in the port's name and all: the audit prints them unescaped, in
    // the form --name and admin journal take (issue 26); the escaped id of earlier tables works too.
    await must(ts.api.put('/switch/sa', mockSwitch));
    await must(ts.api.put('/switch/sa/port/gi1/0/7'));
    const port = rows(await cli.ok('admin', 'audit', '--kind', 'port', '--name', 'sa', 'gi1/0/7'));
    expect(port.slice(1).map((r) => [r[2], r[3], r[5]])).to.deep.equal([['port', 'sa gi1/0/7', 'PortRegistered']]);
    expect(rows(await cli.ok('admin', 'audit', '--kind', 'port', '--name', ...port[1][3].split(' '))), 'the printed Name works').to.deep.equal(port);
    expect(rows(await cli.ok('admin', 'audit', '--kind', 'port', '--name', 'sa/gi1%2F0%2F7')), 'the escaped id too').to.deep.equal(port);
    const journal = rows(await cli.ok('admin', 'journal', 'port', ...port[1][3].split(' ')));
    expect(journal.slice(1).map((r) => r[3]), 'admin journal takes the Name the audit printed').to.deep.equal(['PortRegistered']);
    expect(rows(await cli.ok('admin', 'journal', 'port', 'sa/gi1%2F0%2F7')), 'and the escaped id').to.deep.equal(journal);
    expect((await cli.run('admin', 'audit', '--kind', 'user', '--name', 'a', 'b')).code, 'two names for a user').to.equal(2);
    const dora = rows(await cli.ok('admin', 'audit', '--kind', 'user', '--name', 'dora'));
    expect(dora.slice(1).map((r) => r[5])).to.deep.equal(['UserJoined', 'UserCreated']);
    // The password hash is not there.
    expect(dora[2][6]).to.include('[redacted]');
    const page = await cli.ok('admin', 'audit', '--kind', 'project', '--limit', '2');
    expect(rows(page).slice(1).map((r) => r[3])).to.deep.equal(['many-4', 'many-3']);
    const cursor = /More: add --cursor (\S+)/.exec(page)![1];
    expect(rows(await cli.ok('admin', 'audit', '--kind', 'project', '--limit', '2', '--cursor', cursor)).slice(1).map((r) => r[3])).to.deep.equal(['many-2', 'many-1']);
    const every = await cli.ok('admin', 'audit', '--kind', 'project', '--limit', '2', '--all');
    expect(rows(every).slice(1).map((r) => r[3])).to.deep.equal(['many-4', 'many-3', 'many-2', 'many-1', 'many-0', 'p1']);
    expect(every).to.not.match(/More:/);
    // --by filters by who made the change (--user would name the caller).
    const byAdmin = rows(await cli.ok('admin', 'audit', '--by', 'admin', '--limit', '5')).slice(1);
    expect(byAdmin).to.have.length(5);
    expect(byAdmin.every((r) => r[1] === 'admin')).to.equal(true);
    expect(rows(await cli.ok('admin', 'audit', '--by', 'dora'))).to.have.length(1);
    const json = await cli.json('admin', 'audit', '--by', 'admin', '--limit', '1');
    expect(json.entries).to.have.length(1);
    expect(json.next).to.be.a('string');
    expect(rows(await cli.ok('admin', 'audit', '--until', '2000-01-01T00:00:00Z'))).to.deep.equal([['At', 'By', 'Kind', 'Name', 'Call', 'Event', 'Details']]);
    const bad = await cli.run('admin', 'audit', '--since', 'yesterday');
    expect(bad.code).to.equal(1);
    expect(bad.stderr).to.match(/BadArgumentError: since must be an ISO 8601 date-time/);
    const member = await cli.as({ as: { user: 'dora', password: 'dora-pw' } })('admin', 'audit');
    expect(member.code).to.equal(1);
    expect(member.stderr).to.match(/AuthorizationError/);
  });

  it('backup PATH: the service writes the copy there (a relative PATH from the current folder); an existing PATH is refused', async () => {
    expect(await cli.ok('admin', 'backup', join(dir, 'b1'))).to.equal('');
    expect(existsSync(join(dir, 'b1', 'data.mdb'))).to.equal(true);
    const rel = await hilt(ts.url, ['admin', 'backup', 'b2', '--json'], { cwd: dir });
    expect(rel.code, rel.stderr).to.equal(0);
    expect(JSON.parse(rel.stdout).path).to.equal(join(dir, 'b2'));
    const again = await cli.run('admin', 'backup', join(dir, 'b1'));
    expect(again.code).to.equal(1);
    expect(again.stderr).to.match(/DuplicateError: .* exists already/);
    // The copy is a data folder: a service starts on it, given the service's key (never in a backup: docs/identity.md).
    const restored = await startTestServer({ secretKeyFile: keyFilePath(ts.config) }, {}, join(dir, 'b1'));
    try {
      expect((await must(restored.api.get('/projects'))).body).to.include.members(['p1', 'many-4']);
    } finally {
      await stopTestServer(restored, false);
    }
  });
});
