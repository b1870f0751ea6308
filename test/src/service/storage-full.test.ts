import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServerProcess } from '../../helpers/process';
import { Client, must, obm } from '../../helpers/server';

const admin = { user: 'root', password: 'root-pw' };

/**
 * The data file may not grow (the soft RLIMIT_FSIZE of the running process: its writes past the
 * limit fail with EFBIG, as on a full disk) or may again ('unlimited').
 */
function limitFileSize(pid: number, bytes: number | 'unlimited'): void {
  execFileSync('prlimit', ['--pid', String(pid), `--fsize=${bytes}:`]);
}

describe('a commit the disk refuses (LMDB)', function () {
  this.timeout(90_000);
  let dir: string;
  beforeEach(() => { dir = mkdtempSync(join(tmpdir(), 'hilt-full-')); });
  let output: () => string = () => '';
  afterEach(function () {
    // What the service said, when it failed (it may have died).
    if (this.currentTest?.state === 'failed') console.log(output().slice(-4_000));
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers 503 without changing the read model, keeps serving, works again once the disk has room, and loses nothing acknowledged', async function () {
    if (process.env.HILT_STORAGE === 'postgres') this.skip();
    const data = join(dir, 'data');
    // SIGXFSZ handled: a write past the limit fails (EFBIG) instead of killing the process.
    const preload = join(dir, 'xfsz.js');
    writeFileSync(preload, "process.on('SIGXFSZ', () => undefined);\n");
    const env = { HILT_DATA_DIR: data, HILT_ADMIN_USER: admin.user, HILT_ADMIN_PASSWORD: admin.password, NODE_OPTIONS: `--require ${preload}` };
    const first = await startServerProcess(env);
    output = first.output;
    const api = new Client(first.url, admin);
    await must(api.put('/node/before', { obm: obm() }));

    limitFileSize(first.child.pid!, statSync(join(data, 'data.mdb')).size);
    const acked: string[] = [];
    let refused: string | undefined;
    // Registrations until one needs the file to grow; metadata makes each event large.
    for (let i = 0; i < 2_000 && !refused; i++) {
      const r = await api.put(`/node/n${i}`, { obm: obm(`bmc${i}`), metadata: { m: 'x'.repeat(4_000) } });
      if (r.status === 200) {
        acked.push(`n${i}`);
        continue;
      }
      expect(r.status, r.text).to.equal(503);
      expect(r.body).to.have.keys('type', 'msg');
      // The cause, not lmdb-js's pointer to it.
      expect(r.body.msg).to.match(/^storage refused the change: the commit failed: File too large/);
      refused = `n${i}`;
    }
    expect(refused, 'no write was refused').to.be.a('string');
    // Still serving, and the refused node is nowhere.
    expect(first.child.exitCode).to.equal(null);
    const listed = (await must(api.get('/nodes/all'))).body as string[];
    expect(listed).to.have.members(['before', ...acked]);
    expect((await api.get(`/node/${refused}`)).status).to.equal(404);
    // A change of an actor with a journal is refused alike (far more than the free pages hold), and leaves it as it was.
    expect((await api.put('/node/before/metadata/m', { value: 'y'.repeat(500_000) })).status).to.equal(503);
    expect((await must(api.get('/node/before'))).body.metadata).to.equal(undefined);

    // Room again: the same call goes through, on the same actor.
    limitFileSize(first.child.pid!, 'unlimited');
    await must(api.put(`/node/${refused}`, { obm: obm() }));
    await must(api.put('/node/after', { obm: obm() }));
    await must(api.put('/node/before/metadata/m', { value: 'z' }));
    expect(first.child.exitCode).to.equal(null);

    first.child.kill('SIGKILL');
    await first.exited;
    const second = await startServerProcess(env);
    const api2 = new Client(second.url, admin);
    const again = (await must(api2.get('/nodes/all'))).body as string[];
    expect(again).to.have.members(['before', ...acked, refused!, 'after']);
    expect((await must(api2.get('/node/before'))).body.metadata).to.deep.equal({ m: 'z' });
    second.child.kill('SIGTERM');
    await second.exited;
  });
});
