/**
 * The share of a process's main thread that some code takes, per window of time, from a V8 CPU
 * profile (`--cpu-prof`). On a machine whose speed drifts from one second to the next (a shared
 * host), a throughput compared between two runs swings by a fifth or more, while the share of one
 * run's own time spent in some code does not: both its parts slow down together.
 *
 * Windows are given in microseconds of CLOCK_MONOTONIC (`process.hrtime.bigint() / 1000n` in any
 * process of the machine), the clock of the profile's timestamps.
 */
import { readFileSync } from 'node:fs';

interface ProfileNode { id: number; callFrame: { functionName: string; url: string }; children?: number[] }
interface Profile { nodes: ProfileNode[]; startTime: number; samples: number[]; timeDeltas: number[] }

export interface Share {
  /** µs of the window in which the thread ran anything (idle excluded; the collector and V8's own work included) */
  busyUs: number;
  /** µs of those with a frame of the code on the stack */
  codeUs: number;
  /** codeUs / busyUs */
  share: number;
  /** the garbage collector's part of busyUs (its work on the main thread, whoever made the garbage) */
  gcShare: number;
}

/** Monotonic time now, µs, as the profile's timestamps count it. */
export const monotonicUs = (): number => Number(process.hrtime.bigint() / 1000n);

/**
 * For each window [from, to], the main thread's busy time and the part of it with a function of a
 * script whose URL contains `code` on the stack (its callees, system calls included, count too).
 */
export function sharesOf(profileFile: string, code: string, windows: readonly [number, number][]): Share[] {
  const p = JSON.parse(readFileSync(profileFile, 'utf8')) as Profile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  // Each node: idle, or under the code, or neither; parents first (a node's children follow it).
  const kind = new Map<number, 'idle' | 'gc' | 'code' | 'other'>();
  const visit = (n: ProfileNode, under: boolean) => {
    const inCode = under || n.callFrame.url.includes(code);
    const f = n.callFrame.functionName;
    kind.set(n.id, f === '(idle)' ? 'idle' : f === '(garbage collector)' ? 'gc' : inCode ? 'code' : 'other');
    for (const c of n.children ?? []) visit(byId.get(c)!, inCode);
  };
  visit(p.nodes[0], false);
  const out = windows.map(() => ({ busyUs: 0, codeUs: 0, share: 0, gcUs: 0, gcShare: 0 }));
  let t = p.startTime;
  for (let i = 0; i < p.samples.length; i++) {
    t += p.timeDeltas[i];
    // A sample stands for the time until the next one.
    const dt = p.timeDeltas[i + 1] ?? 0;
    const k = kind.get(p.samples[i]);
    if (k === 'idle') continue;
    windows.forEach(([from, to], w) => {
      if (t < from || t >= to) return;
      out[w].busyUs += dt;
      if (k === 'code') out[w].codeUs += dt;
      if (k === 'gc') out[w].gcUs += dt;
    });
  }
  return out.map(({ busyUs, codeUs, gcUs }) => ({ busyUs, codeUs, share: busyUs ? codeUs / busyUs : 0, gcShare: busyUs ? gcUs / busyUs : 0 }));
}
