/**
 * Bulk import (issue 26): `hilt import` of 1,000 nodes with 4 nics each, every nic wired to a
 * port of one of 20 mock switches (1,000 nodes + 4,000 nics + 4,000 ports + 4,000 wirings = 13,020
 * calls), into a fresh hilt (bench/target.ts: LMDB, logging off). Then the same file again,
 * which must change nothing, and an export. Figures are wall-clock seconds of the CLI as a
 * child process, start-up included.
 *
 *   npm run bench:import   (BENCH_IMPORT_NODES, BENCH_IMPORT_NICS change the size)
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTarget } from './inventory';

const NODES = Number(process.env.BENCH_IMPORT_NODES ?? 1000);
const NICS = Number(process.env.BENCH_IMPORT_NICS ?? 4);
const SWITCHES = 20;
const CLI = join(__dirname, '..', 'src', 'cli', 'index.js');

function inventory(): string {
  const lines = ['switches:'];
  for (let s = 0; s < SWITCHES; s++) lines.push(`  - {name: sw${s}, type: mock, hostname: 127.0.0.1, username: u, password: p}`);
  lines.push('nodes:');
  let port = 0;
  for (let n = 0; n < NODES; n++) {
    lines.push(`  - name: node-${n}`, '    obm: {type: mock, host: 127.0.0.1, user: u, password: p}', '    nics:');
    for (let x = 0; x < NICS; x++, port++) {
      const mac = (n * NICS + x).toString(16).padStart(8, '0').replace(/(..)(..)(..)(..)/, '02:00:$1:$2:$3:$4');
      lines.push(`      - {name: eth${x}, macaddr: "${mac}", switch: sw${port % SWITCHES}, port: gi1/0/${Math.floor(port / SWITCHES) + 1}}`);
    }
  }
  return `${lines.join('\n')}\n`;
}

function cli(endpoint: string, args: string[]): Promise<{ seconds: number; out: string }> {
  const t0 = process.hrtime.bigint();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { env: { PATH: process.env.PATH, HIL_ENDPOINT: endpoint, HIL_USERNAME: 'admin', HIL_PASSWORD: 'bench', HILT_IMPORT_TIMES: '1' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('close', (code) => {
      if (code !== 0) return reject(new Error(`hilt ${args.join(' ')} → ${code}: ${err}`));
      for (const l of err.split('\n')) if (/ in [\d.]+ s$/.test(l)) console.log(`  ${l}`);
      resolve({ seconds: Number(process.hrtime.bigint() - t0) / 1e9, out });
    });
  });
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'hilt-bench-import-'));
  const file = join(dir, 'inventory.yaml');
  writeFileSync(file, inventory());
  const target = await startTarget();
  try {
    const first = await cli(target.hilt, ['import', file]);
    const second = await cli(target.hilt, ['import', file]);
    const exported = await cli(target.hilt, ['export']);
    console.log(`hilt import: ${NODES} nodes, ${NICS} nics each, wired to ${SWITCHES} switches (${NODES + 2 * NODES * NICS + NODES * NICS + SWITCHES} calls)`);
    console.log(`first run (adds everything)      ${first.seconds.toFixed(1)} s   ${first.out.trim()}`);
    console.log(`second run (changes nothing)     ${second.seconds.toFixed(1)} s   ${second.out.trim().slice(0, 60)}…`);
    console.log(`export                           ${exported.seconds.toFixed(1)} s   ${exported.out.length} bytes of YAML`);
  } finally {
    await target.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

void main().then(() => process.exit(0), (err) => {
  console.error(err);
  process.exit(1);
});
