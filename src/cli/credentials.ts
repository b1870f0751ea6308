/**
 * Who the CLI calls as, as HIL's CLI: HIL_USERNAME and HIL_PASSWORD (or --user), and on a
 * terminal a prompt for the password when none is given. A password is never needed on the
 * command line.
 */
import { createInterface } from 'node:readline';
import { Credentials, UsageError } from './client';

/** Reads a secret: without echo on a terminal, else the first line of standard input. */
export async function readSecret(question: string): Promise<string> {
  const stdin = process.stdin;
  if (!stdin.isTTY) return firstLine(question);
  // Echo goes off before the prompt shows: nothing typed after seeing it can appear on screen.
  stdin.setRawMode(true);
  process.stderr.write(question);
  stdin.setEncoding('utf8');
  stdin.resume();
  return new Promise<string>((resolve, reject) => {
    let secret = '';
    const finish = () => {
      stdin.removeListener('data', onData);
      stdin.setRawMode(false);
      stdin.pause();
      process.stderr.write('\n');
    };
    const onData = (chunk: string) => {
      for (const ch of chunk) {
        if (ch === '\r' || ch === '\n') {
          finish();
          return resolve(secret);
        }
        if (ch === '\u0003') {
          // Ctrl-C: the terminal is in raw mode, so the signal is ours to raise.
          finish();
          process.exit(130);
        }
        if (ch === '\u0004' && !secret) {
          finish();
          return reject(new UsageError('no password given'));
        }
        if (ch === '\u007f' || ch === '\b') secret = [...secret].slice(0, -1).join('');
        else if (ch >= ' ') secret += ch;
      }
    };
    stdin.on('data', onData);
  });
}

function firstLine(what: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const rl = createInterface({ input: process.stdin, terminal: false });
    let done = false;
    rl.once('line', (line) => {
      done = true;
      rl.close();
      resolve(line);
    });
    rl.once('close', () => {
      if (!done) reject(new UsageError(`${what.replace(/:\s*$/, '')}: nothing on standard input`));
    });
  });
}

/**
 * A password given as an argument (HIL's command lines have them): '-' asks for it instead,
 * after the caller's own password (`login`), so that the prompts come in that order.
 */
export async function passwordArgument(value: string, what: string, login: () => Promise<void>): Promise<string> {
  if (value === '-') {
    await login();
    return readSecret(`${what}: `);
  }
  process.stderr.write(`hilt: warning: the ${what} is on the command line, where other users can see it in the process list; give - to be asked for it instead\n`);
  return value;
}

export interface Identity {
  user?: string;
  password?: string;
  /** a bearer token ($HILT_TOKEN or $HIL_TOKEN): used unless --user names a user */
  token?: string;
}

/**
 * The caller's credentials, asked for at most once. No user: no credentials (the server
 * answers 401). A user without a password: a prompt on a terminal, else a usage error.
 */
export function credentialsFor(id: Identity, endpoint: () => string): () => Promise<Credentials | null> {
  let cached: Promise<Credentials | null> | undefined;
  return () => (cached ??= (async () => {
    if (id.token) return { token: id.token };
    if (!id.user) return null;
    if (id.password !== undefined) return { user: id.user, password: id.password };
    if (!process.stdin.isTTY) throw new UsageError(`no password for ${id.user}: set HIL_PASSWORD, or run hilt on a terminal to be asked for it`);
    return { user: id.user, password: await readSecret(`Password for ${id.user} at ${endpoint()}: `) };
  })());
}
