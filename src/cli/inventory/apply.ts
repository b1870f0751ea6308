/**
 * Carrying out an import's plan through the API: switches then their ports, beside nodes (with
 * their metadata), metadata of existing nodes then nics; then the wiring, which needs both.
 * Calls of a step run IMPORT_CONCURRENCY at a time over kept-alive connections (the service
 * commits concurrent writes together). Progress goes to stderr: a bar on a terminal, a line per
 * step elsewhere. A call the service refuses is reported with its line; the steps that need it
 * are not tried.
 */
import { ApiError, Client, path, TransportError } from '../client';
import { Plan, planSize } from './plan';
import type { Problem } from './model';

export const IMPORT_CONCURRENCY = 32;

interface Step { what: string; calls: { line: number; run: () => Promise<unknown>; key?: string; needs?: string[] }[] }

/**
 * A switch registers its ports one at a time (its mailbox checks each against its deletion), each
 * after a durable commit: ports taken switch by switch would keep every call waiting on one
 * switch. Taken in turn from each switch, the switches work in parallel (28 s → 7 s for 4,000
 * ports on 20 switches, bench/README.md).
 */
function acrossSwitches<T extends { switch: string }>(ports: T[]): T[] {
  const bySwitch = new Map<string, T[]>();
  for (const x of ports) (bySwitch.get(x.switch) ?? bySwitch.set(x.switch, []).get(x.switch)!).push(x);
  const queues = [...bySwitch.values()];
  const out: T[] = [];
  for (let i = 0; out.length < ports.length; i++) for (const q of queues) if (i < q.length) out.push(q[i]);
  return out;
}

export function steps(c: Client, p: Plan): Step[] {
  return [
    { what: 'switches', calls: p.switches.map((s) => ({ line: s.line, key: `switch ${s.name}`, run: () => c.put(path('switch', s.name), s.body) })) },
    { what: 'ports', calls: acrossSwitches(p.ports).map((x) => ({ line: x.line, key: `port ${x.switch} ${x.port}`, needs: [`switch ${x.switch}`], run: () => c.put(path('switch', x.switch, 'port', x.port)) })) },
    { what: 'nodes', calls: p.nodes.map((n) => ({ line: n.line, key: `node ${n.name}`, run: () => c.put(path('node', n.name), n.body) })) },
    { what: 'metadata', calls: p.metadata.map((m) => ({ line: m.line, run: () => c.put(path('node', m.node, 'metadata', m.label), { value: m.value }) })) },
    { what: 'nics', calls: p.nics.map((x) => ({ line: x.line, key: `nic ${x.node} ${x.nic}`, needs: [`node ${x.node}`], run: () => c.put(path('node', x.node, 'nic', x.nic), { macaddr: x.macaddr }) })) },
    {
      what: 'wiring',
      calls: p.wiring.map((w) => ({
        line: w.line, needs: [`port ${w.switch} ${w.port}`, `nic ${w.node} ${w.nic}`, `switch ${w.switch}`, `node ${w.node}`],
        run: () => c.post(path('switch', w.switch, 'port', w.port, 'connect_nic'), { node: w.node, nic: w.nic }),
      })),
    },
  ];
}

/** The progress of an import on stderr. */
class Progress {
  private readonly tty = !!process.stderr.isTTY;
  private done = 0;
  private last = 0;
  private readonly t0 = Date.now();
  constructor(private readonly total: number) {}

  private stepStart = 0;

  step(what: string, n: number): void {
    this.stepStart = Date.now();
    if (!this.tty && n) process.stderr.write(`hilt: import: ${what}: ${n}\n`);
  }

  stepEnd(what: string, n: number): void {
    if (process.env.HILT_IMPORT_TIMES && n) process.stderr.write(`hilt: import: ${what}: ${n} in ${((Date.now() - this.stepStart) / 1000).toFixed(1)} s\n`);
  }

  tick(what: string): void {
    this.done++;
    if (!this.tty) return;
    const now = Date.now();
    if (now - this.last < 100 && this.done < this.total) return;
    this.last = now;
    const width = 30;
    const filled = Math.round((width * this.done) / this.total);
    const rate = this.done / Math.max(0.001, (now - this.t0) / 1000);
    process.stderr.write(`\r\x1b[K[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${this.done}/${this.total} ${what} (${Math.round(rate)}/s)`);
  }

  end(): void {
    if (this.tty) process.stderr.write('\r\x1b[K');
  }
}

/**
 * Runs the plan; the calls the service refused, with their lines. The service out of reach (the
 * connection lost, a call unanswered in time) stops it: no new call is made, those under way end,
 * and the TransportError says how far it got (what was added stays; a run again adds the rest).
 */
export async function apply(c: Client, p: Plan): Promise<Problem[]> {
  const failed: Problem[] = [];
  const failedKeys = new Set<string>();
  const total = planSize(p);
  const progress = new Progress(total);
  let made = 0;
  let lost: TransportError | undefined;
  const runStep = async (step: Step) => {
      if (lost) return;
      progress.step(step.what, step.calls.length);
      let next = 0;
      const worker = async () => {
        while (next < step.calls.length && !lost) {
          const call = step.calls[next++];
          const blocked = call.needs?.find((k) => failedKeys.has(k));
          if (blocked) {
            failed.push({ line: call.line, message: `not tried: ${blocked} could not be registered` });
            if (call.key) failedKeys.add(call.key);
          } else {
            try {
              await call.run();
              made++;
            } catch (err) {
              if (err instanceof TransportError) {
                lost ??= err;
                continue;
              }
              made++;
              if (!(err instanceof ApiError)) throw err;
              failed.push({ line: call.line, message: `${err.type}: ${err.msg}`, ...(err.status >= 500 ? { failed: true } : {}) });
              if (call.key) failedKeys.add(call.key);
            }
          }
          progress.tick(step.what);
        }
      };
      await Promise.all(Array.from({ length: Math.min(IMPORT_CONCURRENCY, step.calls.length) }, worker));
      progress.stepEnd(step.what, step.calls.length);
  };
  const [switches, ports, nodes, metadata, nics, wiring] = steps(c, p);
  try {
    // Switches and their ports do not need the nodes: the two chains run side by side; the wiring needs both.
    await Promise.all([
      (async () => { await runStep(switches); await runStep(ports); })(),
      (async () => { await runStep(nodes); await runStep(metadata); await runStep(nics); })(),
    ]);
    await runStep(wiring);
  } finally {
    progress.end();
  }
  if (lost) {
    // A call under way when the connection was lost may have been carried out: it is not counted.
    throw new TransportError(`${lost.message}: the import stopped after ${made} of ${total} calls${failed.length ? ` (${failed.length} refused or not tried)` : ''}; the calls not made were not tried: hilt import again adds what is missing`);
  }
  return failed.sort((a, b) => a.line - b.line);
}
