/** What the CLI does on a terminal only: the password prompt (no echo), the spinner of --wait. */
import { expect } from 'chai';
import { startTestServer, stopTestServer, TestServer, Client, must, makeNode, mockSwitch, ADMIN } from '../../helpers/server';
import { hilt } from '../../helpers/cli';
import { onTerminal } from '../../helpers/pty';

describe('hilt on a terminal', function () {
  this.timeout(60_000);
  let ts: TestServer;
  let api: Client;
  let env: Record<string, string>;
  before(async () => {
    ts = await startTestServer({ mockSwitchDelayMs: 700 });
    api = ts.api;
    await must(api.put('/project/tp'));
    env = { HIL_ENDPOINT: ts.url, HIL_USERNAME: ADMIN.user };
  });
  after(() => stopTestServer(ts));

  it('asks for the password when HIL_PASSWORD is not set, without echoing it, then answers', async () => {
    const r = await onTerminal(['project', 'list'], env, [{ expect: 'Password for admin at ', send: `${ADMIN.password}\r` }]);
    expect(r.output).to.include(`Password for admin at ${ts.url}: `);
    expect(r.output, 'the password is not echoed').to.not.include(ADMIN.password);
    expect(r.output).to.match(/Projects[\s\S]*tp/);
    expect(r.code).to.equal(0);
  });

  it('a wrong password typed at the prompt is the server\'s 401 (exit 1)', async () => {
    const r = await onTerminal(['project', 'list'], env, [{ expect: 'Password for', send: 'wrong\r' }]);
    expect(r.code).to.equal(1);
    expect(r.output).to.match(/AuthorizationError: invalid username or password/);
  });

  it('--user names the caller; the prompt asks once, also when a command reads a second password', async () => {
    const r = await onTerminal(['--user', ADMIN.user, 'user', 'create', 'tty-user', '-', 'regular'], { HIL_ENDPOINT: ts.url }, [
      { expect: 'Password for admin at', send: `${ADMIN.password}\r` },
      { expect: 'password of the new user tty-user: ', send: 'tty-secret\r' },
    ]);
    expect(r.code, r.output).to.equal(0);
    expect(r.output).to.not.include('tty-secret');
    expect(r.output.match(/Password for admin/g)).to.have.length(1);
    expect((await hilt(ts.url, ['project', 'list'], { as: { user: 'tty-user', password: 'tty-secret' } })).stderr).to.match(/AuthorizationError: this call needs administrative access/);
  });

  it('without a terminal and without HIL_PASSWORD: a usage error (2), no prompt', async () => {
    const r = await hilt(ts.url, ['project', 'list'], { env: { HIL_PASSWORD: undefined } });
    expect(r.code).to.equal(2);
    expect(r.stderr).to.match(/no password for admin: set HIL_PASSWORD/);
  });

  it('--wait shows a spinner with the elapsed time on a terminal, then the final status', async () => {
    await makeNode(api, 'tn', ['eth0']);
    await must(api.put('/switch/ts1', mockSwitch));
    await must(api.put('/switch/ts1/port/gi1/0/1'));
    await must(api.post('/switch/ts1/port/gi1/0/1/connect_nic', { node: 'tn', nic: 'eth0' }));
    await must(api.post('/project/tp/connect_node', { node: 'tn' }));
    await must(api.put('/network/tw', { owner: 'tp', access: 'tp', net_id: '' }));
    const r = await onTerminal(['node', 'network', 'connect', 'tn', 'eth0', 'tw', '--wait'], { ...env, HIL_PASSWORD: ADMIN.password });
    expect(r.code, r.output).to.equal(0);
    expect(r.output).to.match(/\r\x1b\[K[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] connect tn eth0 to tw: PENDING \d+\.\ds/);
    expect(r.output, 'no plain progress lines on a terminal').to.not.include('hilt: waiting for');
    expect(r.output).to.match(/Status\s+\| DONE/);
  });
});
