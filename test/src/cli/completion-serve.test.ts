/** `hilt completion bash` in a real bash, and `hilt serve` as the service's process. */
import { expect } from 'chai';
import { ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { CLI, hilt, rows } from '../../helpers/cli';
import { youngGenerationNotice } from '../../../src/server';
import { freePort } from '../../helpers/process';

const run = promisify(execFile);

/** What bash completes after typing `line` (the last word may be partial). */
async function complete(line: string): Promise<string[]> {
  const script = `source <(${JSON.stringify(process.execPath)} ${JSON.stringify(CLI)} completion bash)
COMP_WORDS=(${line.split(' ').map((w) => `'${w}'`).join(' ')}); COMP_CWORD=$((\${#COMP_WORDS[@]} - 1))
_hilt_complete; printf '%s\\n' "\${COMPREPLY[@]}"`;
  const { stdout } = await run('bash', ['-c', script]);
  return stdout.split('\n').filter(Boolean).sort();
}

describe('hilt completion bash', function () {
  this.timeout(30_000);
  it('completes the groups, the verbs of a group, nested groups, options and argument choices', async () => {
    expect(await complete('hilt ')).to.include.members(['node', 'project', 'network', 'switch', 'port', 'user', 'headnode', 'networking-action', 'admin', 'serve', '--endpoint', '--user']);
    expect(await complete('hilt n')).to.deep.equal(['network', 'networking-action', 'node']);
    expect(await complete('hilt node ')).to.include.members(['list', 'show', 'register', 'delete', 'nic', 'network', 'power', 'bootdev', 'metadata']);
    expect(await complete('hilt node power ')).to.include.members(['off', 'on', 'cycle', 'status']);
    expect(await complete('hilt node list ')).to.include.members(['free', 'all', '--json']);
    expect(await complete('hilt --endpoint http://127.0.0.1:5000 node network connect --')).to.include.members(['--wait', '--json', '--help']);
    expect(await complete('hilt user create alice pw ')).to.include.members(['admin', 'regular']);
    expect(await complete('hilt port nic a')).to.deep.equal(['add']);
  });
});

describe('hilt serve', function () {
  this.timeout(30_000);

  /** `hilt serve ARGS` on a data folder, HILT_PORT `envPort`: the child and what it printed. */
  const serve = (dir: string, args: string[], envPort: number) => {
    const child = spawn(process.execPath, [CLI, 'serve', ...args], {
      env: { PATH: process.env.PATH, HILT_HOST: '127.0.0.1', HILT_PORT: String(envPort), HILT_DATA_DIR: dir, HILT_ADMIN_PASSWORD: 'serve-pw', HILT_LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const log = { text: '' };
    child.stdout.on('data', (d) => (log.text += d));
    child.stderr.on('data', (d) => (log.text += d));
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    return { child, exited, log };
  };
  const ready = async (child: ChildProcess, log: { text: string }) => {
    const deadline = Date.now() + 15_000;
    while (!log.text.includes('hilt is ready')) {
      if (Date.now() > deadline || child.exitCode !== null) throw new Error(`hilt serve did not start:\n${log.text}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  };

  it('says how to give V8 its young generation only when neither its flags nor NODE_OPTIONS do', () => {
    expect(youngGenerationNotice([])).to.match(/^started without --max-semi-space-size/);
    expect(youngGenerationNotice(['--max-semi-space-size=32'])).to.equal(undefined);
    expect(youngGenerationNotice([], '--enable-source-maps --max-semi-space-size=64')).to.equal(undefined);
    expect(youngGenerationNotice(['--enable-source-maps'], '--max-old-space-size=4096')).to.match(/NODE_OPTIONS=--max-semi-space-size=32/);
  });

  it('starts the service as `npm start` does; the CLI talks to it; SIGTERM ends it cleanly', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hilt-serve-'));
    const port = await freePort();
    const { child, exited, log } = serve(dir, [], port);
    try {
      await ready(child, log);
      const url = `http://127.0.0.1:${port}`;
      const as = { user: 'admin', password: 'serve-pw' };
      expect((await hilt(url, ['project', 'create', 'served'], { as })).code).to.equal(0);
      expect(rows((await hilt(url, ['project', 'list'], { as })).stdout)).to.deep.equal([['Projects (1)'], ['served']]);
      child.kill('SIGTERM');
      expect(await exited).to.equal(0);
      expect(log.text).to.match(/shutting down/);
      // Started without the young generation's flag (npm start's): it says how to give it.
      expect(log.text).to.include('started without --max-semi-space-size').and.include('NODE_OPTIONS=--max-semi-space-size=32');
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('serve PORT: the port as HIL\'s `hil serve PORT` took it, over HILT_PORT; a port that is no port is a usage error', async () => {
    const bad = await hilt('http://127.0.0.1:9', ['serve', 'http']);
    expect(bad.code).to.equal(2);
    const dir = mkdtempSync(join(tmpdir(), 'hilt-serve-'));
    const port = await freePort();
    const { child, exited, log } = serve(dir, [String(port)], await freePort());
    try {
      await ready(child, log);
      const r = await hilt(`http://127.0.0.1:${port}`, ['project', 'list', '--json'], { as: { user: 'admin', password: 'serve-pw' } });
      expect([r.code, r.stdout.trim()]).to.deep.equal([0, '[]']);
      child.kill('SIGTERM');
      expect(await exited).to.equal(0);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('serve_networks, HIL\'s networking daemon: nothing to run (serve carries operations out), said on stderr, exit 0', async () => {
    const r = await hilt('http://127.0.0.1:9', ['serve_networks']);
    expect([r.code, r.stdout]).to.deep.equal([0, '']);
    expect(r.stderr).to.equal('hilt: serve_networks has nothing to do: `hilt serve` carries out network operations itself\n');
  });
});
