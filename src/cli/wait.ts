/**
 * --wait: follow a queued network operation until DONE or ERROR (docs/api-conventions.md §8).
 * Progress goes to stderr: a spinner with the elapsed time on a terminal, a plain line per
 * change of status otherwise. The answer (the final status) goes to stdout.
 */
import { ApiError, BadAnswer, Client, path, TransportError } from './client';
import { answer, fields, OperationFailed } from './output';
import { sleep } from '../../lib/time';

export interface ActionStatus {
  status: 'PENDING' | 'DONE' | 'ERROR';
  node: string;
  nic: string;
  type: string;
  channel: string;
  new_network: string | null;
  error?: string;
}

/** networking-action show's table (HIL's CLI shows the same rows), in the one style of every Field/Value table. */
export function actionTable(a: ActionStatus, statusId?: string, idAt: 'first' | 'last' = 'first'): string {
  const id: (string | null)[][] = statusId ? [['Status ID', statusId]] : [];
  // A detach's null new_network prints None, as HIL's PrettyTable printed it.
  const rows: (string | null)[][] = [['Node', a.node], ['NIC', a.nic], ['New Network', a.new_network ?? 'None'], ['Type', a.type], ['Channel', a.channel], ['Status', a.status]];
  if (a.error !== undefined) rows.push(['Error', a.error]);
  return fields(idAt === 'first' ? [...id, ...rows] : [...rows, ...id]);
}

const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

export interface WaitOptions {
  json?: boolean;
  /** print nothing on stdout (the operation is a step of another command) */
  quiet?: boolean;
  /** how often to ask, in ms */
  intervalMs?: number;
  /** give up at this time (ms since the epoch), saying so with `why` (exit code 3); the operation goes on */
  deadline?: { at: number; why: string };
}

/**
 * Polls until the operation leaves PENDING, prints its final status, and throws
 * OperationFailed (exit 3) when it ended in ERROR.
 */
export async function waitFor(client: Client, statusId: string, what: string, opts: WaitOptions = {}): Promise<void> {
  const tty = !!process.stderr.isTTY;
  const t0 = Date.now();
  const elapsed = () => `${((Date.now() - t0) / 1000).toFixed(1)}s`;
  let frame = 0;
  let last = '';
  const clear = () => tty && process.stderr.write('\r\x1b[K');
  // Ctrl-C stops the waiting, not the operation: say how to look it up later.
  const onSigint = () => {
    clear();
    process.stderr.write(`hilt: stopped waiting; the operation goes on: hilt networking-action show ${statusId}\n`);
    process.exit(130);
  };
  process.once('SIGINT', onSigint);
  if (!tty) process.stderr.write(`hilt: waiting for ${what} (${statusId})\n`);
  try {
    for (;;) {
      let r;
      try {
        r = await client.get(path('networking_action', statusId));
      } catch (err) {
        // The server failed or went away, not the operation: say how to look it up later (a
        // terminal's spinner never printed its id).
        const later = `; the operation goes on: hilt networking-action show ${statusId}`;
        if (err instanceof ApiError && err.status >= 500) throw new ApiError(err.status, err.type, err.msg + later, err.call);
        if (err instanceof TransportError) throw new TransportError(err.message + later);
        throw err;
      }
      const a = r.body as ActionStatus;
      // Else an answer without a status (`{}`) would end the wait as a success.
      if (!['PENDING', 'DONE', 'ERROR'].includes(client.field(r, 'status'))) throw new BadAnswer(client.endpoint, r.call, `status "${a.status}"`);
      if (a.status !== 'PENDING') {
        clear();
        if (!tty) process.stderr.write(`hilt: ${what}: ${a.status} after ${elapsed()}\n`);
        if (!opts.quiet) answer(opts.json, r.text, () => actionTable(a, statusId));
        if (a.status === 'ERROR') throw new OperationFailed(`${what} failed: ${a.error ?? 'no reason given'}`);
        return;
      }
      if (opts.deadline && Date.now() >= opts.deadline.at) throw new OperationFailed(`${what}: still ${a.status} after ${opts.deadline.why}`);
      if (tty) process.stderr.write(`\r\x1b[K${FRAMES[frame++ % FRAMES.length]} ${what}: ${a.status} ${elapsed()}`);
      else if (a.status !== last) process.stderr.write(`hilt: ${what}: ${a.status} (${elapsed()})\n`);
      last = a.status;
      await sleep(opts.intervalMs ?? 200);
    }
  } finally {
    process.removeListener('SIGINT', onSigint);
    clear();
  }
}
