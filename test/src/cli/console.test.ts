/**
 * hilt node console show|start|stop|attach, against a node with the mock OBM's console (it
 * echoes what is typed): attach on a real pseudo-terminal (raw mode, ssh's `~.`). The IPMI
 * console itself is tested against ipmi_sim in test/src/routes/consoles.test.ts.
 */
import { expect } from 'chai';
import { startTestServer, stopTestServer, TestServer, Client, must, makeUser, obm, ADMIN } from '../../helpers/server';
import { hilt } from '../../helpers/cli';
import { onTerminal } from '../../helpers/pty';
import { until } from '../../helpers/wait';
import { Escapes } from '../../../src/cli/commands/console';

describe('hilt node console', function () {
  this.timeout(60_000);
  let ts: TestServer;
  let api: Client;
  before(async () => {
    ts = await startTestServer();
    api = ts.api;
    await must(api.put('/project/tp'));
    await must(api.put('/project/other'));
    await must(api.put('/node/n1', { obm: obm('bmc-n1') }));
    await must(api.post('/project/tp/connect_node', { node: 'n1' }));
    await makeUser(api, 'tina', 'tina-pw', ['tp']);
    await makeUser(api, 'otto', 'otto-pw', ['other']);
  });
  after(() => stopTestServer(ts));

  it('start records, show prints the log, stop deletes it', async () => {
    const tina = { user: 'tina', password: 'tina-pw' };
    expect((await hilt(ts.url, ['node', 'console', 'show', 'n1'], { as: tina })).code).to.equal(1);
    expect((await hilt(ts.url, ['node', 'console', 'start', 'n1'], { as: tina })).code).to.equal(0);
    await until('the banner in the log', async () => (await api.get('/node/n1/console')).text.includes('mock serial console of bmc-n1'));
    const shown = await hilt(ts.url, ['node', 'console', 'show', 'n1'], { as: tina });
    expect(shown.code).to.equal(0);
    expect(shown.stdout).to.include('mock serial console of bmc-n1');
    expect((await hilt(ts.url, ['node', 'console', 'stop', 'n1'], { as: tina })).code).to.equal(0);
    const gone = await hilt(ts.url, ['node', 'console', 'show', 'n1'], { as: tina });
    expect(gone.code).to.equal(1);
    expect(gone.stderr).to.match(/NotFoundError: the console log for n1 does not exist/);
  });

  it('attach shows the console, sends keys (Ctrl-C too) and detaches on ~. at the start of a line', async () => {
    const env = { HIL_ENDPOINT: ts.url, HIL_USERNAME: 'tina', HIL_PASSWORD: 'tina-pw' };
    const r = await onTerminal(['node', 'console', 'attach', 'n1'], env, [
      { expect: 'mock serial console of bmc-n1', send: 'echo hello\r' },
      { expect: 'echo hello', send: 'a~b\x03\r' },
      { expect: 'a~b', send: '~~x\r~.' },
    ]);
    expect(r.code, r.output).to.equal(0);
    expect(r.output).to.include('[connected to the console of n1');
    expect(r.output).to.include('[detached]');
    // The mock echoes what reached the node: `~~` sent one `~`, `~.` was not sent.
    const log = (await api.get('/node/n1/console')).text;
    expect(log).to.include('a~b\x03\r\n');
    expect(log).to.include('~x\r\n');
    expect(log).not.to.include('~.');
    // attach started the recording, and the audit log says who attached.
    const audit = (await api.get('/admin/audit?kind=node&name=n1')).body.entries.map((e: { call: string; by: string }) => `${e.call}:${e.by}`);
    expect(audit).to.include('console_attach:tina');
  });

  it('attach is refused to another project\'s member (exit 1, the server\'s error)', async () => {
    const r = await hilt(ts.url, ['node', 'console', 'attach', 'n1'], { as: { user: 'otto', password: 'otto-pw' } });
    expect(r.code).to.equal(1);
    expect(r.stderr).to.match(/AuthorizationError: this call needs access to project tp/);
  });

  it('attach stays attached through a silence longer than the timeout (HILT_TIMEOUT bounds the handshake only)', async () => {
    const env = { HIL_ENDPOINT: ts.url, HIL_USERNAME: ADMIN.user, HIL_PASSWORD: ADMIN.password, HILT_TIMEOUT: '1' };
    const run = onTerminal(['node', 'console', 'attach', 'n1'], env, [{ expect: '[connected', send: '' }]);
    await until('a viewer', () => ts.consoles.viewerCount() === 1);
    await new Promise((r) => setTimeout(r, 2500));
    expect(ts.consoles.viewerCount(), 'still attached after 2.5 quiet seconds').to.equal(1);
    await must(api.del('/node/n1/console'));
    const r = await run;
    expect(r.code, r.output).to.equal(3);
    expect(r.output).to.include('no longer recorded (4410)');
  });

  it('attach ends with exit 3 and the reason when the server closes the console', async () => {
    const env = { HIL_ENDPOINT: ts.url, HIL_USERNAME: ADMIN.user, HIL_PASSWORD: ADMIN.password };
    const run = onTerminal(['node', 'console', 'attach', 'n1'], env, [{ expect: '[connected', send: '' }]);
    await until('a viewer', () => ts.consoles.viewerCount() === 1);
    await must(api.del('/node/n1/console'));
    const r = await run;
    expect(r.code, r.output).to.equal(3);
    expect(r.output).to.include('no longer recorded (4410)');
  });

  it('Escapes: ~. only at the start of a line, ~~ sends ~, state carried across chunks', () => {
    const sent: string[] = [];
    let detached = 0;
    const e = new Escapes((b) => sent.push(b.toString()), () => detached++, () => sent.push('<help>'));
    e.feed(Buffer.from('ab~.c\r~'));
    e.feed(Buffer.from('~'));
    e.feed(Buffer.from('d\n~?'));
    expect(sent.join('')).to.equal('ab~.c\r~d\n<help>');
    expect(detached).to.equal(0);
    e.feed(Buffer.from('\r~.'));
    expect(detached).to.equal(1);
  });
});
