/**
 * Serial consoles (issue 23) with the real IPMI driver: real ipmitool `sol activate` against real
 * ipmi_sim BMCs whose SOL serial line is a TCP endpoint this test serves on the loopback
 * (test/helpers/serial-line.ts). Never skipped: a missing tool fails the suite.
 */
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { connect } from 'node:net';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { startTestServer, stopTestServer, TestServer, Client, must, makeUser, IPMI_OBM, REDFISH_OBM, Creds, ADMIN, basic } from '../../helpers/server';
import { startIpmiSim, stopAllIpmiSims, requireIpmiTools, IpmiSim } from '../../helpers/ipmisim';
import { startSerialLine, SerialLine, solChildren } from '../../helpers/serial-line';
import { until } from '../../helpers/wait';
import { watch, Watcher } from '../../helpers/console-ws';
import { logFileName } from '../../../hardware/console-log';
import { refusingDeletions } from '../../helpers/faulty-fs';

const BMC_USER = 'admin';
const BMC_PASSWORD = 'sol-Pa55-word';

interface Bmc { sim: IpmiSim; line: SerialLine }

/** A BMC whose serial line this test holds. */
async function bmcWithSerialLine(): Promise<Bmc> {
  const line = await startSerialLine();
  const sim = await startIpmiSim({ user: BMC_USER, password: BMC_PASSWORD, solPort: line.port });
  await until('ipmi_sim connected its SOL serial line', () => line.connected(), 10_000);
  return { sim, line };
}

/** The status a refused WebSocket handshake got. */
async function refusal(p: Promise<Watcher>): Promise<number> {
  try {
    const w = await p;
    w.ws.close();
    return 101;
  } catch (err) {
    return (err as { status?: number }).status ?? -1;
  }
}

describe('serial consoles over IPMI Serial-over-LAN (ipmitool against ipmi_sim)', function () {
  this.timeout(90_000);
  let ts: TestServer;
  let api: Client;
  let alice: Creds;
  let bob: Creds;
  const bmcs: Record<string, Bmc> = {};

  const register = (node: string, bmc: Bmc) =>
    must(api.put(`/node/${node}`, { obm: { type: IPMI_OBM, host: bmc.sim.host, user: BMC_USER, password: BMC_PASSWORD } }));

  before(async () => {
    requireIpmiTools();
    ts = await startTestServer({ ipmiCipherSuite: '3', obmTimeoutMs: 8000 });
    api = ts.api;
    await must(api.put('/project/red'));
    await must(api.put('/project/blue'));
    alice = await makeUser(api, 'alice', 'alice-pw', ['red']);
    bob = await makeUser(api, 'bob', 'bob-pw', ['blue']);
    for (const n of ['c1', 'c2', 'c3']) {
      bmcs[n] = await bmcWithSerialLine();
      await register(n, bmcs[n]);
    }
    await must(api.post('/project/red/connect_node', { node: 'c1' }));
  });
  after(async () => {
    await stopTestServer(ts);
    await stopAllIpmiSims();
    for (const b of Object.values(bmcs)) await b.line.close();
  });

  it('records the console (HIL client\'s start_console and show_console: PUT and GET without a body) and shows it as text', async () => {
    const member = api.with(alice);
    // Nothing recorded yet: HIL's 404.
    const none = await member.get('/node/c1/console');
    expect(none.status).to.equal(404);
    expect(none.body.type).to.equal('NotFoundError');
    // HIL's client (hil/client/node.py): start_console is `PUT <endpoint>/node/<node>/console`
    // with no body and no Content-Type, read through check_response (200, empty body).
    const put = await member.call('PUT', '/node/c1/console');
    expect(put.status).to.equal(200);
    expect(put.text).to.equal('');
    await until('a sol activate child', () => ts.consoles.active() === 1, 15_000);
    await bmcs.c1.line.write('BIOS v1.0\r\nbooting the kernel...\r\n');
    // show_console: `GET …/console`, the response's raw content (not JSON).
    await until('the text in the log', async () => (await member.get('/node/c1/console')).text.includes('booting the kernel...'), 10_000);
    const shown = await member.get('/node/c1/console');
    expect(shown.status).to.equal(200);
    expect(shown.headers['content-type']).to.equal('text/plain; charset=utf-8');
    expect(shown.text).to.include('BIOS v1.0\r\n');
    // ipmitool's own banner is not the node's output
    expect(shown.text).not.to.include('SOL Session operational');
    // PUT again: idempotent, still one session
    await must(member.call('PUT', '/node/c1/console'));
    expect(solChildren().length).to.equal(ts.consoles.active());
  });

  it('never puts the BMC password on a command line (/proc/<pid>/cmdline of every child)', async () => {
    const kids = solChildren();
    expect(kids.length).to.be.greaterThan(0);
    for (const k of kids) {
      expect(k.argv.join(' ')).not.to.include(BMC_PASSWORD);
      expect(k.argv).to.include('-E');
      expect(k.argv).to.include('activate');
    }
    expect([...ts.consoles.processes().values()]).to.have.members(kids.map((k) => k.pid));
  });

  it('streams the recent log then live output over a WebSocket, and sends what is typed to the serial line', async () => {
    const w = await watch(ts.url, 'c1', alice);
    await until('the recent log', () => w.text().includes('booting the kernel...'));
    await bmcs.c1.line.write('login: ');
    await until('live output', () => w.text().includes('login: '));
    // ssh-style `~.` at a line's start would end ipmitool's session: it reaches the node instead.
    w.send('root\r~.\r');
    await until('input on the serial line', () => bmcs.c1.line.received().includes('root\r~.\r'), 10_000);
    expect(ts.consoles.active()).to.equal(1);
    // A second viewer shares the one session.
    const w2 = await watch(ts.url, 'c1', ADMIN);
    await until('the second viewer has the log', () => w2.text().includes('login: '));
    await bmcs.c1.line.write('Password: ');
    await until('both see it', () => w.text().includes('Password: ') && w2.text().includes('Password: '));
    expect(solChildren().length).to.equal(1);
    w.ws.close();
    w2.ws.close();
  });

  it('opens a dropped session again (its ipmitool killed), after a notice', async () => {
    const before = solChildren();
    expect(before.length).to.equal(1);
    const w = await watch(ts.url, 'c1', alice);
    process.kill(before[0]!.pid, 'SIGKILL');
    await until('a new sol activate child', () => {
      const now = solChildren();
      return now.length === 1 && now[0]!.pid !== before[0]!.pid && ts.consoles.active() === 1;
    }, 20_000);
    await until('the notice', () => w.text().includes('[hilt] the console session ended; reconnecting'));
    await bmcs.c1.line.write('after the restart\r\n');
    await until('output after the restart', async () => w.text().includes('after the restart') && (await api.get('/node/c1/console')).text.includes('after the restart'), 10_000);
    const metrics = (await api.get('/metrics')).text;
    expect(metrics).to.match(/^hilt_console_restarts_total [1-9]/m);
    expect(metrics).to.match(/^hilt_console_sessions 1$/m);
    w.ws.close();
  });

  it('refuses the log and the stream to another project\'s member and to an anonymous caller', async () => {
    expect((await api.with(bob).get('/node/c1/console')).status).to.equal(401);
    expect((await api.with(null).get('/node/c1/console')).status).to.equal(401);
    expect((await api.with(bob).call('PUT', '/node/c1/console')).status).to.equal(401);
    expect((await api.with(bob).del('/node/c1/console')).status).to.equal(401);
    expect(await refusal(watch(ts.url, 'c1', bob))).to.equal(401);
    expect(await refusal(watch(ts.url, 'c1', null))).to.equal(401);
    expect(await refusal(watch(ts.url, 'c1', { user: 'alice', password: 'wrong' }))).to.equal(401);
    // A free node's console is the admin's.
    expect((await api.with(alice).call('PUT', '/node/c2/console')).status).to.equal(401);
    // Unknown node: 404; a page of another site: refused.
    expect(await refusal(watch(ts.url, 'nope', alice))).to.equal(404);
    expect(await refusal(watch(ts.url, 'c1', alice, { origin: 'http://evil.example' }))).to.equal(401);
    // A plain GET of the stream is a 400, and records nothing.
    expect((await api.with(alice).get('/node/c1/console/stream')).status).to.equal(400);
  });

  it('answers an Upgrade to any other path as plain HTTP and closes the connection; the /v0 stream upgrades too', async () => {
    const { port } = new URL(ts.url);
    const raw = (path: string) => new Promise<string>((resolve, reject) => {
      const s = connect(Number(port), '127.0.0.1', () => s.write(
        `GET ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: ${basic(ADMIN)}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n` +
        `Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\n\r\n`));
      let got = '';
      s.on('data', (d) => (got += d));
      s.on('error', reject);
      // resolves only when the service closes the connection
      s.on('close', () => resolve(got));
    });
    const shown = await raw('/node/c1');
    expect(shown).to.match(/^HTTP\/1\.1 200 /);
    expect(shown).to.contain('"name":"c1"');
    expect(await raw('/no/such/call')).to.match(/^HTTP\/1\.1 404 [^]*NotFoundError/);
    const w = await watch(`${ts.url}/v0`, 'c1', alice);
    w.ws.close();
  });

  it('disconnects a viewer at once when its user leaves the project', async () => {
    const carol = await makeUser(api, 'carol', 'carol-pw', ['red']);
    const w = await watch(ts.url, 'c1', carol);
    await must(api.post('/auth/basic/user/carol/remove_project', { project: 'red' }));
    const closed = await Promise.race([w.closed, new Promise<null>((r) => setTimeout(() => r(null), 2000))]);
    expect(closed, 'closed within 2 s of the change').to.not.equal(null);
    expect(closed!.code).to.equal(4403);
    expect(await refusal(watch(ts.url, 'c1', carol))).to.equal(401);
  });

  it('records who started, attached and stopped in the audit log', async () => {
    const page = (await api.get('/admin/audit?kind=node&name=c1')).body;
    const calls = page.entries.map((e: { call: string; by: string }) => `${e.call}:${e.by}`);
    expect(calls).to.include('start_console:alice');
    expect(calls).to.include('console_attach:alice');
    expect(calls).to.include('console_attach:admin');
  });

  it('deletes the log when the node is released; the next tenant reads 404 until it starts recording', async () => {
    const file = join(ts.dataDir, 'consoles', logFileName('c1'));
    expect(existsSync(file)).to.equal(true);
    const w = await watch(ts.url, 'c1', alice);
    await must(api.with(alice).post('/project/red/detach_node', { node: 'c1' }));
    expect((await w.closed).code).to.equal(4410);
    expect(solChildren().length, 'no sol child left after the release').to.equal(0);
    expect(existsSync(file)).to.equal(false);
    await must(api.with(bob).post('/project/blue/connect_node', { node: 'c1' }));
    const r = await api.with(bob).get('/node/c1/console');
    expect(r.status).to.equal(404);
    expect(r.text).not.to.include('booting the kernel');
    await must(api.with(bob).call('PUT', '/node/c1/console'));
    const fresh = await api.with(bob).get('/node/c1/console');
    expect(fresh.status).to.equal(200);
    expect(fresh.text).not.to.include('booting the kernel');
    await until('a session for bob', () => ts.consoles.processes().has('c1') && solChildren().length === 1, 15_000);
  });

  it('stop_console (DELETE) ends the session and deletes the log; again is a 200', async () => {
    // HIL's client: `DELETE <endpoint>/node/<node>/console`, no body.
    const r = await api.with(bob).call('DELETE', '/node/c1/console');
    expect(r.status).to.equal(200);
    expect(solChildren().length, 'no ipmitool left after stop').to.equal(0);
    expect(existsSync(join(ts.dataDir, 'consoles', logFileName('c1')))).to.equal(false);
    expect((await api.with(bob).get('/node/c1/console')).status).to.equal(404);
    expect((await api.with(bob).call('DELETE', '/node/c1/console')).status).to.equal(200);
    const audit = (await api.get('/admin/audit?kind=node&name=c1')).body.entries.map((e: { call: string; by: string }) => `${e.call}:${e.by}`);
    expect(audit).to.include('stop_console:bob');
  });

  it('never shows the next tenant a log the disk refuses to delete, at the end of its recording nor at the start of the next: 503 until it can be deleted', async () => {
    await must(api.with(bob).call('PUT', '/node/c1/console'));
    await until('a session', () => ts.consoles.processes().has('c1') && solChildren().length === 1, 15_000);
    await bmcs.c1.line.write('bob\'s secret\r\n');
    await until('logged', async () => (await api.with(bob).get('/node/c1/console')).text.includes('bob\'s secret'), 10_000);
    let undo = refusingDeletions(join(ts.dataDir, 'consoles'));
    try {
      await must(api.with(bob).post('/project/blue/detach_node', { node: 'c1' }));
      await must(api.post('/project/red/connect_node', { node: 'c1' }));
      await must(api.with(alice).call('PUT', '/node/c1/console'));
      const r = await api.with(alice).get('/node/c1/console');
      expect(r.status).to.equal(503);
      expect(r.body.type).to.equal('ServiceUnavailableError');
      expect(r.text).to.not.include('secret');
      undo();
      undo = () => {};
      await until('the log of alice\'s recording', async () => (await api.with(alice).get('/node/c1/console')).status === 200, 10_000);
      expect((await api.with(alice).get('/node/c1/console')).text).to.not.include('secret');
    } finally {
      undo();
    }
    await must(api.with(alice).call('DELETE', '/node/c1/console'));
  });

  it('refuses typed input beyond what the node has taken (a paste faster than the serial line), and tells the viewer', async () => {
    await must(api.call('PUT', '/node/c2/console'));
    await until('a session', () => ts.consoles.processes().has('c2'), 15_000);
    const w = await watch(ts.url, 'c2', ADMIN);
    for (let i = 0; i < 128; i++) w.ws.send(Buffer.alloc(64 * 1024, 0x61));
    await until('told', () => w.text().includes('[hilt] the node has not taken what was typed before: input dropped'), 15_000);
    expect(w.text().split('input dropped').length - 1, 'told once for the run').to.equal(1);
    w.ws.close();
  });

  it('deleting a node ends its console and deletes its log', async () => {
    await must(api.call('PUT', '/node/c2/console'));
    await until('a session', () => ts.consoles.processes().has('c2') && solChildren().length === 1, 15_000);
    await bmcs.c2.line.write('c2 output\r\n');
    await until('c2 logged', async () => (await api.get('/node/c2/console')).text.includes('c2 output'));
    await must(api.del('/node/c2'));
    expect(solChildren().length, 'no sol child left after the delete').to.equal(0);
    expect(readdirSync(join(ts.dataDir, 'consoles')).filter((f) => f.startsWith('c2'))).to.deep.equal([]);
    // The name registered again is a new node: nothing recorded.
    await register('c2', bmcs.c2);
    expect((await api.get('/node/c2/console')).status).to.equal(404);
  });

  it('answers 409 for a Redfish node, whose consoles are not offered', async () => {
    await must(api.put('/node/rf1', { obm: { type: REDFISH_OBM, host: 'https://127.0.0.1:1', user: 'u', password: 'p' } }));
    for (const r of [await api.call('PUT', '/node/rf1/console'), await api.get('/node/rf1/console'), await api.del('/node/rf1/console')]) {
      expect(r.status).to.equal(409);
      expect(r.body.msg).to.match(/no serial console/);
    }
    expect(await refusal(watch(ts.url, 'rf1', ADMIN))).to.equal(409);
  });

  it('opens the session again when the BMC drops it (another client\'s sol deactivate; noticed by the SOL keepalive)', async function () {
    this.timeout(120_000);
    await must(api.call('PUT', '/node/c3/console'));
    await until('a session', () => ts.consoles.processes().has('c3'), 15_000);
    const first = ts.consoles.processes().get('c3')!;
    // Another client (an operator at the BMC) takes the payload away.
    const [host, port] = [bmcs.c3.sim.host.split(':')[0]!, String(bmcs.c3.sim.port)];
    await new Promise<void>((resolve, reject) => execFile('ipmitool', ['-I', 'lanplus', '-C', '3', '-H', host, '-p', port, '-U', BMC_USER, '-E', 'sol', 'deactivate'],
      { env: { PATH: process.env.PATH, IPMI_PASSWORD: BMC_PASSWORD } }, (err) => (err ? reject(err) : resolve())));
    // ipmitool's keepalive notices within about 25 s (ipmi_sim); then a new session, after 1 s.
    await until('a new session', () => {
      const pid = ts.consoles.processes().get('c3');
      return pid !== undefined && pid !== first;
    }, 90_000, 200);
    await bmcs.c3.line.write('after the BMC dropped it\r\n');
    await until('logged', async () => (await api.get('/node/c3/console')).text.includes('after the BMC dropped it'), 10_000);
  });

  it('keeps recording across a restart, and leaves no ipmitool behind when the service stops', async () => {
    const dir = ts.dataDir;
    await must(api.call('PUT', '/node/c3/console'));
    await until('a session', () => ts.consoles.processes().has('c3') && solChildren().length === 1, 15_000);
    await bmcs.c3.line.write('before the restart\r\n');
    await until('logged', async () => (await api.get('/node/c3/console')).text.includes('before the restart'));
    await ts.close();
    expect(solChildren().length, 'no ipmitool left after the service stopped').to.equal(0);
    ts = await startTestServer({ ipmiCipherSuite: '3', obmTimeoutMs: 8000 }, {}, dir);
    api = ts.api;
    await until('the session again', () => ts.consoles.processes().has('c3') && solChildren().length === 1, 15_000);
    await bmcs.c3.line.write('after the restart\r\n');
    await until('both in the log', async () => {
      const t = (await api.get('/node/c3/console')).text;
      return t.includes('before the restart') && t.includes('after the restart');
    }, 10_000);
  });
});
