/**
 * CI smoke runs of the benches that have no smoke run of their own (issue 27, item 6): the event
 * stream, LMDB and PostgreSQL side by side, authentication, bulk import, the switch families and
 * the wiring check, the idle sweep. Tiny loads and short runs; each must run to its end, without
 * errors, and print every figure (a number where one belongs), never a check of how fast.
 */
import { expect } from 'chai';
import { runBench } from '../helpers/bench';

const line = (out: string, re: RegExp) => out.split('\n').find((l) => re.test(l));
const NUM = '([\\d.]+)';

describe('bench smoke runs: the other benches print their figures', function () {
  this.timeout(240_000);

  it('bench/events.ts: throughput with and without consumers, the service\'s CPU, the streams\' share of its main thread and the delay', async () => {
    const { code, out } = await runBench('events.js', { BENCH_CONSUMERS: '3', BENCH_SECONDS: '0.5', BENCH_ROUNDS: '1', BENCH_WRITE_CONNECTIONS: '4' });
    expect(code, out).to.equal(0);
    const alone = line(out, /^0: register alone/);
    const withConsumers = line(out, /^0: register \+3 consumers/);
    expect(alone, out).to.match(new RegExp(`${NUM} req/s .* errors 0 +service CPU ${NUM} µs/registration, system ${NUM} \\(load generator ${NUM}\\)  streams' share of the main thread ${NUM} %`));
    // The streams' work is in the profile of the round with consumers (a frame at least per registration).
    const share = /streams' share of the main thread ([\d.]+) %/.exec(withConsumers ?? '');
    expect(share, out).to.not.equal(null);
    const m = new RegExp(`${NUM} req/s .* errors 0 .*consumers ${NUM}\\).*delay p50 ${NUM} ms p99 ${NUM} ms max ${NUM} ms \\(${NUM} timed\\), ${NUM} received`).exec(withConsumers ?? '');
    expect(m, out).to.not.equal(null);
    // Every consumer got every registration of its round (the stream loses nothing).
    expect(Number(m![7])).to.be.greaterThan(0);
    expect(Number(m![7]) % 3).to.equal(0);
    for (const re of [/^throughput with consumers \/ alone, per round: [\d.]+; median [\d.]+/, /^service CPU per registration alone \/ with consumers, per round: [\d.]+; median [\d.]+/, /^delay p99 per round: \d+ ms; median \d+ ms/,
      /^the streams' share of the service's main thread with consumers, per round: [\d.]+ %; median [\d.]+ %/, /^throughput that share leaves, \(1 - share with\) \/ \(1 - share alone\), per round: [\d.]+; median [\d.]+/]) {
      expect(line(out, re), `${re} in:\n${out}`).to.be.a('string');
    }
  });

  it('bench/postgres.ts: writes, reads and start on each engine, and failover times', async () => {
    const { code, out } = await runBench('postgres.js', {
      BENCH_NODES: '10', BENCH_SECONDS: '0.5', BENCH_WARMUP_SECONDS: '0.2', BENCH_FAILOVERS: '1', BENCH_PAUSES: '1', BENCH_CONNECTIONS: '2', BENCH_WRITE_CONNECTIONS: '2',
    });
    expect(code, out).to.equal(0);
    const reg = out.split('\n').filter((l) => l.startsWith('node_register (durable)'));
    expect(reg, out).to.have.length.at.least(1);
    for (const l of [...reg, line(out, /^show_node/)!]) expect(l, out).to.match(/req\/s .*req\/s .*[\d.]+$/);
    expect(line(out, /^start with 10 nodes/), out).to.match(/\d+ ms +\d+ ms$/);
    expect(line(out, /^failover after kill -9 \(median/), out).to.match(/\d+ ms$/);
    expect(line(out, /^failover after SIGSTOP \(median/), out).to.match(/\d+ ms$/);
  });

  it('bench/auth.ts: a bearer token against a remembered basic credential', async () => {
    const { code, out } = await runBench('auth.js', { BENCH_SECONDS: '0.5', BENCH_ROUNDS: '1', BENCH_CONNECTIONS: '2' });
    expect(code, out).to.equal(0);
    expect(line(out, /^round 1 +basic/), out).to.match(/\d+ req\/s/);
    expect(line(out, /^round 1 +bearer/), out).to.match(/\d+ req\/s/);
    expect(out).to.match(/cost ratio bearer\/basic [\d.]+/);
  });

  it('bench/import.ts: a first import, a second that changes nothing, an export', async () => {
    const { code, out } = await runBench('import.js', { BENCH_IMPORT_NODES: '6', BENCH_IMPORT_NICS: '2' });
    expect(code, out).to.equal(0);
    expect(line(out, /^first run/), out).to.match(/[\d.]+ s +added .*6 nodes, 12 nics/);
    expect(line(out, /^second run/), out).to.match(/nothing to change/);
    expect(line(out, /^export/), out).to.match(/\d+ bytes of YAML/);
  });

  it('bench/switch.ts: SSH sessions, the data-centre families, the REST switches and the wiring check', async () => {
    const { code, out } = await runBench('switch.js', {
      BENCH_SECONDS: '0.5', BENCH_IN_FLIGHT: '4', BENCH_WIRING_PORTS: '2', BENCH_WIRING_SWITCHES: '2', BENCH_WIRING_RUNS: '1',
    });
    expect(code, out).to.equal(0);
    const rows = [/^one session per operation +1 /, /^batched +8 /, /^dellos10: batched/, /^sonic: batched/, /^junos: batched/, /^cumulus_nvue: batched/, /^brocade: batched/, /^dellnos9: batched/];
    for (const re of rows) {
      const l = line(out, re);
      expect(l, `${re} in:\n${out}`).to.be.a('string');
      // ops/s first, errors 0 somewhere after the latencies
      expect(l!.replace(re, '').trim().split(/\s+/).slice(0, 5).every((x) => /^[\d.]+$/.test(x)), l).to.equal(true);
    }
    expect(out).to.match(/junos +commits per operation: one per operation [\d.]+, batched [\d.]+/);
    expect(line(out, /^1 +[\d.]+ +1 +[\d.]+ +2 /), out).to.be.a('string');
  });

  it('bench/sweep.ts: the idle sweep in slices against one loop', async () => {
    const { code, out } = await runBench('sweep.js', { BENCH_ACTORS: '1000' });
    expect(code, out).to.equal(0);
    expect(line(out, /^one synchronous loop/), out).to.match(/\d+ +[\d.]+ +1\.00$/);
    expect(line(out, /^slices of/), out).to.match(/\d+ +[\d.]+ +[\d.]+$/);
  });
});
