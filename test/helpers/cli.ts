/**
 * The hilt command line as a child process (dist/src/cli/index.js), against a test server on
 * 127.0.0.1. Asynchronous: the server answering it usually runs in this very process.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { ADMIN, Creds } from './server';
import { addCredentials, record } from './secrets';

export const CLI = join(__dirname, '..', '..', 'src', 'cli', 'index.js');

export interface CliResult { code: number | null; stdout: string; stderr: string }

export interface CliOpts {
  /** the caller (default: the admin); null: no credentials in the environment */
  as?: Creds | null;
  /** written to stdin, which is then closed (default: stdin is empty) */
  input?: string;
  env?: Record<string, string | undefined>;
  timeoutMs?: number;
  /** the folder it runs in (default: the test's) */
  cwd?: string;
}

/** Only what the CLI reads: no HIL_* variable of the machine leaks in. */
function cliEnv(endpoint: string, o: CliOpts): NodeJS.ProcessEnv {
  const who = o.as === undefined ? ADMIN : o.as;
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, HIL_ENDPOINT: endpoint };
  if (who) {
    Object.assign(env, { HIL_USERNAME: who.user, HIL_PASSWORD: who.password });
    addCredentials(who.user, who.password);
  }
  for (const [k, v] of Object.entries(o.env ?? {})) {
    if (v === undefined) delete env[k];
    else env[k] = v;
  }
  return env;
}

export function hilt(endpoint: string, args: string[], o: CliOpts = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { env: cliEnv(endpoint, o), stdio: ['pipe', 'pipe', 'pipe'], cwd: o.cwd });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`hilt ${args.join(' ')} did not finish:\n${stdout}\n${stderr}`));
    }, o.timeoutMs ?? 15_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      record(stdout, `hilt ${args[0]} stdout`);
      record(stderr, `hilt ${args[0]} stderr`);
      resolve({ code, stdout, stderr });
    });
    // A command that refuses its arguments may exit before reading stdin: that is no failure here.
    child.stdin.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code !== 'EPIPE') reject(err);
    });
    child.stdin.end(o.input ?? '');
  });
}

/** A CLI bound to one server: `run('node', 'list', 'all')`. */
export function cliFor(endpoint: string, defaults: CliOpts = {}) {
  const run = (...args: string[]) => hilt(endpoint, args, defaults);
  const as = (o: CliOpts) => (...args: string[]) => hilt(endpoint, args, { ...defaults, ...o });
  /** Runs and requires exit 0 and nothing on stderr; gives stdout. */
  const ok = async (...args: string[]) => {
    const r = await run(...args);
    if (r.code !== 0 || r.stderr) throw new Error(`hilt ${args.join(' ')} → ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
    return r.stdout;
  };
  /** Runs with --json appended and parses stdout, requiring exit 0. */
  const json = async (...args: string[]) => JSON.parse(await ok(...args, '--json'));
  return { run, as, ok, json };
}

/** The rows of a table as cells (borders and rules dropped), as a script cuts them at `|`. */
export function rows(table: string): string[][] {
  return table.split('\n')
    .filter((l) => l.startsWith('|'))
    .map((l) => l.slice(1, -1).split('|').map((c) => c.trim()));
}
