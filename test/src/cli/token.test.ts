/** hilt token create|list|revoke, $HILT_TOKEN / $HIL_TOKEN, and hilt admin rotate-key, against a started server. */
import { expect } from 'chai';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTestServer, stopTestServer, TestServer, must, makeUser, ADMIN } from '../../helpers/server';
import { cliFor } from '../../helpers/cli';
import { addSecret } from '../../helpers/secrets';
import { scratchDir } from '../../helpers/scratch';
import { keyFilePath } from '../../../src/secrets/at-rest';
import { keyId, newKeyText, parseKey } from '../../../lib/sealed';

describe('hilt token and $HILT_TOKEN', function () {
  this.timeout(60_000);
  let ts: TestServer;
  let cli: ReturnType<typeof cliFor>;
  const user = { user: 'tok-user', password: 'tok-user-pw-1' };
  before(async () => {
    ts = await startTestServer();
    cli = cliFor(ts.url);
    await must(ts.api.put('/project/tp'));
    await makeUser(ts.api, user.user, user.password, ['tp']);
  });
  after(() => stopTestServer(ts));

  it('creates a token (printed once, alone on stdout), which HILT_TOKEN or HIL_TOKEN then sends as a bearer token', async () => {
    const r = await cli.as({ as: user })('token', 'create', '--description', 'ci job', '--expires-in', '600');
    expect(r.code).to.equal(0);
    const token = r.stdout.trim();
    addSecret(token);
    expect(token).to.match(/^hilt_[0-9a-f]{16}_\S{43}$/);
    expect(r.stderr).to.match(/shown only now/);
    for (const v of ['HILT_TOKEN', 'HIL_TOKEN']) {
      const l = await cli.as({ as: null, env: { [v]: token } })('project', 'node', 'list', 'tp', '--json');
      expect(l.code, `${v}: ${l.stderr}`).to.equal(0);
      expect(JSON.parse(l.stdout)).to.deep.equal([]);
    }
    // --user wins over the token
    const other = await cli.as({ as: null, env: { HILT_TOKEN: token } })('--user', 'nobody', 'project', 'list');
    expect(other.stderr).to.match(/no password for nobody/);
  });

  it('lists tokens without their secrets, and revokes one', async () => {
    const token = (await cli.as({ as: user })('token', 'create', '--read-only', '--project', 'tp', '--json')).stdout;
    const made = JSON.parse(token) as { id: string; token: string };
    addSecret(made.token);
    const list = JSON.parse((await cli.as({ as: user })('token', 'list', '--json')).stdout) as { id: string; read_only: boolean; project: string }[];
    expect(list.find((t) => t.id === made.id)).to.include({ read_only: true, project: 'tp' });
    const table = (await cli.as({ as: user })('token', 'list')).stdout;
    expect(table).to.include(made.id);
    expect(table).to.not.include(made.token.slice(-20));
    // An admin lists them with --owner (the caller stays the admin: --user would name the caller).
    const theirs = JSON.parse((await cli.as({ as: ADMIN })('token', 'list', '--owner', user.user, '--json')).stdout) as { id: string }[];
    expect(theirs.map((t) => t.id)).to.include(made.id);
    // read-only: a change is refused
    const change = await cli.as({ as: null, env: { HILT_TOKEN: made.token } })('network', 'create', 'tnet', 'tp');
    expect(change.code).to.equal(1);
    expect(change.stderr).to.match(/ForbiddenError/);
    expect((await cli.as({ as: user })('token', 'revoke', made.id)).code).to.equal(0);
    const after = await cli.as({ as: null, env: { HILT_TOKEN: made.token } })('project', 'node', 'list', 'tp');
    expect(after.code).to.equal(1);
    expect(after.stderr).to.match(/invalid or expired token/);
  });

  it('hilt admin rotate-key NEWFILE re-encrypts the credentials and installs the key', async () => {
    await must(ts.api.put('/node/rk1', { obm: { type: 'http://schema.massopencloud.org/haas/v0/obm/mock', host: 'h', user: 'u', password: 'cli-rotate-pw-1' } }));
    const file = join(scratchDir('hilt-cli-key-'), 'new.key');
    const text = newKeyText();
    writeFileSync(file, text, { mode: 0o600 });
    const out = await cli.json('admin', 'rotate-key', file);
    expect(out).to.include({ key_id: keyId(parseKey(text)!), installed: true });
    expect(readFileSync(keyFilePath(ts.config), 'utf8')).to.equal(text);
    const again = await cli.run('admin', 'rotate-key', file);
    expect(again.code).to.equal(1);
    expect(again.stderr).to.match(/already under key/);
  });
});
