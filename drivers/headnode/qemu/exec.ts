/** Running the helper programs (qemu-img, ovs-vsctl, ip) with an argument list, never a shell. */
import { execFile } from 'node:child_process';
import * as path from 'node:path';

import { HeadnodeError } from '../types';

export function run(
  cmd: string,
  args: string[],
  timeoutMs: number,
  env?: NodeJS.ProcessEnv,
): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    execFile(
      cmd,
      args,
      { timeout: timeoutMs, killSignal: 'SIGKILL', env, maxBuffer: 4 << 20, encoding: 'utf8' },
      (err, stdout, stderr) => {
        if (!err) return resolve({ stdout, stderr });
        const e = err as NodeJS.ErrnoException & { killed?: boolean; code?: unknown };
        let why: string;
        if (e.code === 'ENOENT') why = `${cmd} not found (is it installed and on PATH?)`;
        else if (e.killed) why = `timed out after ${timeoutMs} ms`;
        else why = (stderr || '').trim() || e.message;
        reject(new HeadnodeError(`${path.basename(cmd)} ${args.join(' ')}: ${why}`));
      },
    );
  });
}
