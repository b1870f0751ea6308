/**
 * Running the helper programs (qemu-img, ovs-vsctl, ip) with an argument list, never a shell.
 * An aborted signal SIGKILLs the program and the call rejects with the signal's reason.
 */
import { execFile } from 'node:child_process';
import * as path from 'node:path';

import { HeadnodeError } from '../types';

export interface RunOptions {
  env?: NodeJS.ProcessEnv;
  /** written to the program's stdin */
  input?: string;
}

export function run(cmd: string, args: string[], signal: AbortSignal, opts: RunOptions = {}): Promise<{ stdout: string; stderr: string }> {
  const { env, input } = opts;
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const child = execFile(
      cmd,
      args,
      { signal, killSignal: 'SIGKILL', env, maxBuffer: 4 << 20, encoding: 'utf8' },
      (err, stdout, stderr) => {
        if (!err) return resolve({ stdout, stderr });
        if (signal.aborted) return reject(signal.reason);
        const e = err as NodeJS.ErrnoException & { code?: unknown };
        const why = e.code === 'ENOENT' ? `${cmd} not found (is it installed and on PATH?)` : (stderr || '').trim() || e.message;
        reject(new HeadnodeError(`${path.basename(cmd)} ${args.join(' ')}: ${why}`));
      },
    );
    if (input !== undefined) child.stdin?.end(input);
  });
}
