/** A stand-in for child_process.execFile that records every run (the ipmitool driver's `execFile` option). */
import { execFile } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import type { ExecFileFn } from '../../drivers/obm/ipmitool';

export interface ExecCall { file: string; args: string[]; env: NodeJS.ProcessEnv; child: ChildProcess }

/** Records every run; `fake` may replace a run (return undefined to run the real one). */
export function spyExec(fake?: (n: number, ...a: Parameters<ExecFileFn>) => ChildProcess | undefined) {
  const calls: ExecCall[] = [];
  const fn: ExecFileFn = (file, args, options, cb) => {
    const child = fake?.(calls.length, file, args, options, cb) ?? execFile(file, args, options, cb);
    calls.push({ file, args: [...args], env: options.env ?? {}, child });
    return child;
  };
  return { fn, calls };
}
