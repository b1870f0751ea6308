/**
 * What the CLI prints: the answer on stdout (a table, or with --json the server's JSON as it
 * is), everything else on stderr, and the exit code that says whose failure it was.
 */
import Table from 'cli-table3';
import { ApiError, BadAnswer, TransportError, UsageError } from './client';
import { InventoryErrors } from './inventory/model';

export const EXIT = {
  ok: 0,
  /** the server refused the call (4xx) */
  refused: 1,
  usage: 2,
  /** the server, its hardware or the transport failed (5xx, unreachable, an operation in ERROR) */
  failed: 3,
} as const;

/** A network operation that ended in ERROR (its reason is the message). */
export class OperationFailed extends Error {}

type Cell = string | number | boolean | null | undefined;

const cell = (v: Cell): string => (v === null || v === undefined ? '' : String(v));

const ACRONYMS = new Set(['id', 'nic', 'vnc', 'bmc', 'vlan', 'mac', 'lldp', 'ip']);
const SMALL = new Set(['a', 'an', 'and', 'by', 'for', 'in', 'of', 'on', 'per', 'the', 'to']);

/**
 * The one header style of every table (issue 26): Title Case, acronyms in capitals, small words
 * in lower case (`Held by the Service`, `Network ID`); a word with capitals of its own is kept.
 */
export function headerCase(header: string): string {
  return header.split(' ').map((w, i) => {
    const lower = w.toLowerCase();
    if (w !== lower && w !== w[0] + w.slice(1).toLowerCase()) return w;
    if (ACRONYMS.has(lower)) return lower.toUpperCase();
    if (i > 0 && SMALL.has(lower)) return lower;
    return lower.charAt(0).toUpperCase() + lower.slice(1);
  }).join(' ');
}

/**
 * The borders of HIL's PrettyTable tables, in ASCII: scripts of HIL's CLI cut rows at `|` and
 * skip the `+---+` rules.
 */
const BORDERS = {
  top: '-', 'top-mid': '+', 'top-left': '+', 'top-right': '+',
  bottom: '-', 'bottom-mid': '+', 'bottom-left': '+', 'bottom-right': '+',
  left: '|', 'left-mid': '+', mid: '-', 'mid-mid': '+', right: '|', 'right-mid': '+', middle: '|',
};

/** A table; headers in bold on a terminal only, so that piped output carries no escape codes. */
export function table(rawHead: string[], rows: Cell[][]): string {
  const head = rawHead.map(headerCase);
  const tty = !!process.stdout.isTTY;
  // No rule between rows (as HIL's PrettyTable): a multi-line cell stays readable.
  const t = new Table({ head, chars: BORDERS, style: { head: tty ? ['bold'] : [], border: [], compact: true } });
  for (const r of rows) t.push(r.map(cell));
  return t.toString();
}

/**
 * One column of names, sorted (the order of a list carries no meaning: docs/api-conventions.md §1),
 * under a header that counts them, as HIL's CLI printed its lists (`Projects (2)`).
 */
export const list = (title: string, names: unknown): string => {
  const sorted = [...(names as string[])].sort();
  return table([`${title} (${sorted.length})`], sorted.map((n) => [n]));
};

/** Every key-value table (show, a queued operation, its final status) has these two headers. */
export const fields = (rows: Cell[][]): string => table(['Field', 'Value'], rows);

/** How long ago an ISO 8601 time was, as tables print ages: `12s ago`, `3m ago`, `2h ago`, `4d ago`. */
export function ago(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return '';
  const s = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.floor(s / 60)}m ago`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ago`;
  return `${Math.floor(s / 86400)}d ago`;
}

/** A 404 without the service's error body: a web framework's page for an unknown path (HIL's Flask). */
const bare404 = (err: ApiError): boolean => err.status === 404 && err.type === 'HTTP 404';

/**
 * A call the server does not offer (an older server, or HIL's): the 404 of an unknown path,
 * hilt's (`no such call`) or one without an error body (HIL's answer for any unknown path).
 */
export const notOffered = (err: unknown): boolean => err instanceof ApiError && err.status === 404 && (/^no such call/.test(err.msg) || bare404(err));

export function out(text: string): void {
  process.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
}

/** Prints the answer: the server's JSON as it is for --json, else the table. */
export function answer(json: boolean | undefined, raw: string, render: () => string): void {
  if (json) {
    if (raw) out(raw);
  } else out(render());
}

export function note(text: string): void {
  process.stderr.write(`hilt: ${text}\n`);
}

/**
 * Says what went wrong on stderr and gives the exit code. `lastJsonCall`: the last call that
 * answered JSON, whose answer a TypeError was met reading (a `{}` where a list is due, `null`).
 */
export function report(err: unknown, endpoint?: string, lastJsonCall?: string): number {
  // The TypeError's own words stay in the line: were it hilt's bug, not the answer's, they say where.
  if (err instanceof TypeError && endpoint && lastJsonCall) err = new BadAnswer(endpoint, lastJsonCall, `${err.name}: ${err.message}`);
  if (err instanceof ApiError) {
    if (notOffered(err)) {
      note(`the server${endpoint ? ` at ${endpoint}` : ''} does not offer ${err.call} (404${bare404(err) ? '' : ` ${err.type}: ${err.msg}`})`);
    } else note(`${err.type}: ${err.msg}`);
    return err.status >= 500 ? EXIT.failed : EXIT.refused;
  }
  if (err instanceof InventoryErrors) {
    // Every problem of an import file on a line of its own, `file:line: problem`, as compilers do.
    process.stderr.write(`${err.message}\n`);
    note(`${err.problems.length} problem${err.problems.length === 1 ? '' : 's'}: nothing was changed${err.problems.some((p) => /^(not tried|[A-Z]\w+Error:)/.test(p.message)) ? ' by the calls above (the rest was added)' : ''}`);
    return err.problems.some((p) => p.failed) ? EXIT.failed : EXIT.refused;
  }
  if (err instanceof UsageError) {
    note(err.message);
    return EXIT.usage;
  }
  if (err instanceof TransportError || err instanceof OperationFailed || err instanceof BadAnswer) {
    note(err.message);
    return EXIT.failed;
  }
  note(`unexpected failure: ${err instanceof Error ? err.stack ?? err.message : String(err)}`);
  return EXIT.failed;
}
