/**
 * A debug-only trace of where a network operation's time goes inside the service (issue 27):
 * the moment of each step, from its acceptance to its outcome's commit. Off unless a bench
 * turns it on (bench/target.ts, BENCH_OP_TRACE); off, a mark is one test of a boolean. It is
 * keyed by node, which holds at most one operation at a port at a time (network-operations.ts);
 * a second operation accepted for a node while its first is under way starts the node's trace
 * again, so it is meant for benches that keep one operation per node in flight.
 */
import { performance } from 'node:perf_hooks';

/** The steps, in order: each one's time is measured from the step before it. */
export const STEPS = [
  'accepted', // the nic decided to accept it (its accepted_at)
  'acceptDurable', // the acceptance committed (the 202 may go) and the runner handed it on
  'portActor', // its port actor handed it to the hardware path
  'switchTurn', // its switch's queue gave it the switch
  'applied', // the switch applied the change
  'portAnswered', // the port actor's answer reached the runner
  'outcomeDecided', // the nic decided the outcome (its finished_at)
  'outcomeDurable', // the outcome committed: readable as DONE
] as const;
export type Step = typeof STEPS[number];

export interface StepFigures { from: Step; to: Step; p50: number; p90: number; p99: number; mean: number }

class OperationTrace {
  private on = false;
  private readonly open = new Map<string, Partial<Record<Step, number>>>();
  private readonly done: Partial<Record<Step, number>>[] = [];

  enable(): void {
    this.on = true;
  }

  mark(node: string, step: Step): void {
    if (!this.on) return;
    let t = this.open.get(node);
    if (step === 'accepted' || !t) this.open.set(node, (t = {}));
    t[step] ??= performance.now();
    if (step === 'outcomeDurable') {
      this.done.push(t);
      this.open.delete(node);
    }
  }

  /** Each step's time (ms) over the operations traced from acceptance to durable outcome; the last row is the whole. */
  figures(): { operations: number; steps: StepFigures[] } {
    const whole = this.done.filter((t) => t.accepted !== undefined && t.outcomeDurable !== undefined);
    const figures = (from: Step, to: Step): StepFigures => {
      const xs = whole.filter((t) => t[from] !== undefined && t[to] !== undefined).map((t) => t[to]! - t[from]!).sort((a, b) => a - b);
      const at = (p: number) => xs[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))] ?? NaN;
      return { from, to, p50: at(50), p90: at(90), p99: at(99), mean: xs.reduce((a, b) => a + b, 0) / xs.length };
    };
    const steps = STEPS.slice(1).map((to, i) => figures(STEPS[i], to));
    steps.push(figures('accepted', 'outcomeDurable'));
    return { operations: whole.length, steps };
  }
}

/** The process's one trace (debug-only). */
export const operationTrace = new OperationTrace();
