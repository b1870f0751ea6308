/**
 * Smoke runs of the per-request benches (bench/inventory.ts, bench/network.ts): tiny inventory,
 * one second per scenario. They check that each bench runs to its end and prints every figure
 * (a number in each column), never how fast anything is: the figures are recorded in
 * bench/README.md from full runs.
 */
import { expect } from 'chai';
import { join } from 'node:path';
import { runBench } from '../helpers/bench';

/** The line of a figure: its name, then numbers only. */
const figure = (out: string, name: string) => out.split('\n').find((l) => l.startsWith(name));
const NUMBERS = /^[\w ()_,.>=-]*?((\s+[\d.]+){5,})/;

describe('bench smoke runs: inventory and network operations print their figures', function () {
  this.timeout(120_000);

  it('bench/inventory.ts: node_register, show_node and list free nodes, each with its ratio', async () => {
    const { code, out } = await runBench('inventory.js', {
      BENCH_NODES: '50', BENCH_SECONDS: '1', BENCH_WARMUP_SECONDS: '0.2', BENCH_CONNECTIONS: '4', BENCH_WRITE_CONNECTIONS: '4',
    });
    expect(code, out).to.equal(0);
    // One write phase: the two concurrencies are the same here.
    expect(out.match(/hilt writes: 4 connections/g), out).to.have.length(1);
    expect(out).to.match(/hilt reads: 50 nodes/);
    for (const name of ['node_register (durable)', 'show_node', 'list free nodes (50 free)']) {
      const line = figure(out, name);
      expect(line, `${name} in:\n${out}`).to.be.a('string');
      const m = NUMBERS.exec(line!);
      expect(m, line).to.not.equal(null);
      const [rps, , , errors, ratio] = m![1].trim().split(/\s+/).map(Number);
      expect(rps, line).to.be.greaterThan(0);
      expect(errors, line).to.equal(0);
      expect(ratio, line).to.be.greaterThan(0);
    }
  });

  it('bench/network.ts: the runs without injected delay (polling every 1 ms and 10 ms, an event stream), with ops/s, accept->DONE and seen p50 and p99, and ops/bare', async () => {
    const { code, out } = await runBench('network.js', { BENCH_NETWORK_NODES: '4', BENCH_SECONDS: '1', BENCH_NETWORK_RUNS: 'no-delay', BENCH_OP_TRACE: '1' });
    expect(code, out).to.equal(0);
    const rows = out.split('\n').filter((l) => l.startsWith('no injected delay'));
    expect(rows, out).to.have.length(4);
    const waits: string[] = [];
    for (const row of rows) {
      const m = /^no injected delay\s+(\d+)\s+(\d+)\s+(poll \d+ ms|events)\s+(.*)$/.exec(row);
      expect(m, row).to.not.equal(null);
      waits.push(m![3]);
      const [ops, p50, p99, seen, errors, bare, perBare] = m![4].trim().split(/\s+/);
      const [seen50, seen99] = seen.split('/').map(Number);
      expect(Number(m![1]), row).to.equal(4);
      expect(Number(m![2]), row).to.be.oneOf([1, 4]);
      expect(Number(ops), row).to.be.greaterThan(0);
      expect(Number(p50), row).to.be.at.least(0);
      expect(Number(p99), row).to.be.at.least(Number(p50));
      expect(seen50, row).to.be.greaterThan(0);
      expect(seen99, row).to.be.at.least(seen50);
      expect(Number(errors), row).to.equal(0);
      expect(Number(bare), row).to.be.greaterThan(0);
      expect(Number(perBare), row).to.be.greaterThan(0);
    }
    expect(waits).to.deep.equal(['poll 1 ms', 'poll 1 ms', 'poll 10 ms', 'events']);
    // BENCH_OP_TRACE: each run's operations traced inside the service, step by step.
    const traces = out.split('\nsteps inside the service').slice(1);
    expect(traces, out).to.have.length(4);
    for (const trace of traces) {
      expect(Number(/\((\d+) operations\)/.exec(trace)?.[1]), trace).to.be.greaterThan(0);
      const whole = /accepted -> outcomeDurable\s+p50\s+([\d.]+)\s+p90\s+([\d.]+)/.exec(trace);
      expect(whole, trace).to.not.equal(null);
      expect(Number(whole![1]), trace).to.be.greaterThan(0);
      expect(Number(whole![2]), trace).to.be.at.least(Number(whole![1]));
      for (const step of ['acceptDurable', 'portActor', 'switchTurn', 'applied', 'portAnswered', 'outcomeDecided']) expect(trace, step).to.match(new RegExp(`-> ${step} +p50 +\\d`));
    }
  });

  it('bench/alternate.ts: two builds (here the same one twice) alternating, with the ratio and the CPU per request of each', async () => {
    const tree = join(__dirname, '..', '..', '..');
    for (const scenario of ['show', 'register']) {
      const { code, out } = await runBench('alternate.js', { BENCH_NODES: '50', BENCH_SECONDS: '1', BENCH_WARMUP_SECONDS: '0.2', BENCH_CONNECTIONS: '4' }, [scenario, tree, tree, '1']);
      expect(code, out).to.equal(0);
      expect(out.match(/^round 1 .*: ratio [\d.]+, \d+ us CPU per request \(bare \d+\)$/gm), out).to.have.length(2);
      const summary = out.split('\n').find((l) => l.startsWith(`${tree}: ratio median`));
      const m = /ratio median ([\d.]+) .*CPU per request median (\d+) us \(bare (\d+) us\)/.exec(summary ?? '');
      expect(m, out).to.not.equal(null);
      expect(Number(m![1]), out).to.be.greaterThan(0);
      expect(Number(m![2]), out).to.be.greaterThan(0);
    }
  });
});
