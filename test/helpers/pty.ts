/**
 * The CLI on a pseudo-terminal (python3's pty module), for what it does only on a terminal:
 * the password prompt without echo, the spinner of --wait. Asynchronous, like helpers/cli.ts.
 */
import { spawn } from 'node:child_process';
import { CLI } from './cli';

/**
 * Runs the CLI with a terminal as stdin, stdout and stderr. Each step waits until the output
 * so far contains `expect`, then types `send`. Gives everything the terminal showed.
 */
const DRIVER = String.raw`
import json, os, pty, select, sys, time
spec = json.loads(sys.argv[1])
pid, fd = pty.fork()
if pid == 0:
    os.execve(spec['argv'][0], spec['argv'], spec['env'])
out = b''
def read(deadline):
    global out
    while time.time() < deadline:
        r, _, _ = select.select([fd], [], [], 0.05)
        if r:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                return False
            if not chunk:
                return False
            out += chunk
            return True
    return None
for step in spec['steps']:
    deadline = time.time() + 10
    while step['expect'].encode() not in out:
        if read(deadline) is not True:
            break
    os.write(fd, step['send'].encode())
deadline = time.time() + 20
while read(deadline):
    pass
_, status = os.waitpid(pid, 0)
sys.stdout.write(json.dumps({'code': os.waitstatus_to_exitcode(status), 'output': out.decode('utf-8', 'replace')}))
`;

export interface PtyResult { code: number; output: string }

export function onTerminal(args: string[], env: Record<string, string>, steps: { expect: string; send: string }[] = []): Promise<PtyResult> {
  const spec = { argv: [process.execPath, CLI, ...args], env: { PATH: process.env.PATH ?? '', TERM: 'xterm', ...env }, steps };
  return new Promise((resolve, reject) => {
    const py = spawn('python3', ['-c', DRIVER, JSON.stringify(spec)], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    py.stdout.on('data', (d) => (out += d));
    py.stderr.on('data', (d) => (err += d));
    py.on('error', reject);
    py.on('close', (code) => {
      if (code !== 0) return reject(new Error(`pty driver failed (${code}): ${err}`));
      resolve(JSON.parse(out) as PtyResult);
    });
  });
}
