/** The QMP client against a fake QEMU that greets and then never answers. */
import * as fsp from 'node:fs/promises';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { expect } from 'chai';

import { qmpSession } from '../../../../drivers/headnode/qemu/qmp';
import { HeadnodeError } from '../../../../drivers/headnode/types';

describe('qmpSession', () => {
  let dir: string;
  let sock: string;
  let server: net.Server;
  const open = new Set<net.Socket>();

  before(async () => {
    dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'hilt-qmp-'));
    sock = path.join(dir, 'q.sock');
    server = net.createServer((c) => {
      open.add(c);
      c.on('close', () => open.delete(c));
      c.resume(); // read what the client sends (and so see it hang up)
      c.write('{"QMP": {"version": {}, "capabilities": []}}\n'); // then silence, like a wedged QEMU
    });
    await new Promise<void>((r) => server.listen(sock, r));
  });

  after(async () => {
    await new Promise((r) => server.close(r));
    await fsp.rm(dir, { recursive: true, force: true });
  });

  it('ends a wait for an answer when the signal aborts, rejecting with its reason and closing the connection', async () => {
    const controller = new AbortController();
    const reason = new Error('deadline');
    const session = qmpSession(sock, [{ execute: 'query-status' }], controller.signal).catch((e) => e);
    await new Promise((r) => setTimeout(r, 100));
    expect(open.size).to.equal(1);
    controller.abort(reason);
    expect(await session).to.equal(reason);
    await new Promise((r) => setTimeout(r, 50));
    expect(open.size).to.equal(0);
  });

  it('does not connect at all with a signal that has aborted', async () => {
    const reason = new Error('too late');
    let connections = 0;
    server.on('connection', () => connections++);
    expect(await qmpSession(sock, [{ execute: 'quit' }], AbortSignal.abort(reason)).catch((e) => e)).to.equal(reason);
    await new Promise((r) => setTimeout(r, 50));
    expect(connections).to.equal(0);
  });

  it('gives a probe answerMs: a QEMU silent that long is reported as not answering', async () => {
    const t0 = Date.now();
    const err = await qmpSession(sock, [{ execute: 'query-status' }], new AbortController().signal, { answerMs: 100 }).catch((e) => e);
    expect(err).to.be.instanceOf(HeadnodeError).with.property('message').that.matches(/no answer within 100 ms/);
    expect(Date.now() - t0).to.be.within(90, 1000);
  });
});
