/**
 * CI smoke run of the seed and the scale bench (issue 27): a tiny inventory (40 nodes, 2 switches)
 * seeded through the actors on LMDB, then every figure of the scale bench measured on it. Checks
 * that they run and produce their figures, never their values (no timed assertion).
 */
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { seed, readManifest } from '../../bench/seed';
import { scale } from '../../bench/scale';
import { runBench } from '../helpers/bench';

describe('bench/seed.ts and bench/scale.ts (smoke, tiny inventory)', function () {
  this.timeout(60_000);
  let dir: string;
  before(() => (dir = mkdtempSync(join(tmpdir(), 'hilt-scale-smoke-'))));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('seeds 40 wired nodes through the actors, then measures cold start, RSS, the cost-growth table and the mixed workload', async () => {
    const folder = join(dir, 's40');
    const lines: string[] = [];
    const log = (l: string) => lines.push(l);
    const m = await seed({
      folder, log, concurrency: 16,
      counts: { nodes: 40, nicsPerNode: 2, switches: 2, portsPerSwitch: 40, projects: 4, reserved: 0.5, networks: 8, attachments: 12 },
    });
    for (const phase of ['switches', 'ports', 'projects', 'networks', 'nodes', 'nics', 'wiring', 'reserve', 'attach']) {
      expect(m.phases, phase).to.have.property(phase).that.is.a('number');
      expect(lines.some((l) => l.startsWith(phase)), `progress line of ${phase}`).to.equal(true);
    }
    expect(m.bytes).to.be.greaterThan(0);
    expect(lines.at(-1)).to.match(/^seeded in [\d.]+ s; folder \d+ MiB$/);
    expect(readManifest(folder)).to.deep.include({ nodes: 40, lastNode: 'n39', storage: 'lmdb' });

    const out: string[] = [];
    const report = await scale({
      folders: [{ folder, nodes: 40 }], storage: 'lmdb', seconds: 0.5, connections: 4, soakMinutes: 0.03, starts: 1, warmUpSeconds: 0.5, log: (l) => out.push(l),
    });
    const [size] = report.sizes;
    expect(size.cold).to.have.length(1);
    expect(size.cold[0]).to.be.greaterThan(0);
    expect(size.cpu[0]).to.be.greaterThan(0);
    expect(size.rss[0]).to.be.greaterThan(0);
    expect(Object.keys(size.rows)).to.deep.equal(['show_node', 'node_register', 'port_register', 'list free nodes', "list a project's nodes", 'network attachments']);
    for (const [name, row] of Object.entries(size.rows)) expect(row.ratio, name).to.be.greaterThan(0);
    expect(size.connect.p50).to.be.a('number').and.not.NaN;
    expect(size.connect.errors).to.equal(0);
    expect(report.mixed!.reads).to.be.greaterThan(0);
    expect(report.mixed!.readP99).to.be.a('number').and.not.NaN;
    expect(report.mixed!.failed).to.equal(0);
    expect(report.mixed!.rss.length).to.be.greaterThan(0);
    const text = out.join('\n');
    for (const label of ['cold start (ms)', 'its CPU', 'RSS after start (MiB)', 'show_node', 'node_register', 'port_register', 'connect→DONE p50/p99', 'mixed workload at 40 nodes', 'counted after 0.5 s of warm-up', 'reads ']) {
      expect(text, label).to.contain(label);
    }

    // --show-only: show_node in alternating pairs with the same-shape bare GET.
    const show = await runBench('scale.js', {}, ['--folder', folder, '--show-only', '--rounds', '2', '--seconds', '0.5', '--connections', '4']);
    expect(show.code, show.out).to.equal(0);
    const line = /40 nodes, 4 connections, 2 pairs of 0.5 s: show_node ratio median ([\d.]+) \(([\d.]+), ([\d.]+)\); req\/s (\d+) against (\d+); CPU per request (\d+) us against (\d+)/.exec(show.out);
    expect(line, show.out).to.not.equal(null);
    for (const figure of line!.slice(1)) expect(Number(figure), show.out).to.be.greaterThan(0);
  });
});
