/**
 * Authentication cost (issue 21): the same read (`GET /project/<p>/nodes`, a member's call)
 * with a bearer API token and with a remembered basic-auth credential (verified once, then
 * recognised by a digest of its header), in the same run against the same process, in
 * alternating rounds so that the machine's drift hits both alike. The figure is the cost ratio:
 * basic req/s over bearer req/s (target <= 1.1: a token costs at most 10% more).
 *
 *   npm run bench:auth   (BENCH_SECONDS per round, BENCH_ROUNDS, BENCH_CONNECTIONS change the load)
 */
import autocannon from 'autocannon';
import { startTarget } from './inventory';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const ADMIN = 'Basic ' + Buffer.from('admin:bench').toString('base64');
const MEMBER = { user: 'bench-member', password: 'bench-member-pw' };

async function call(base: string, method: string, path: string, auth: string, body?: unknown): Promise<{ status: number; body: any }> {
  const r = await fetch(base + path, { method, headers: { authorization: auth, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await r.text();
  if (r.status !== 200) throw new Error(`${method} ${path}: ${r.status} ${text}`);
  return { status: r.status, body: text ? JSON.parse(text) : undefined };
}

interface Round { rps: number; p50: number; p99: number; bad: number }

async function load(url: string, auth: string): Promise<Round> {
  const r = await autocannon({ url, connections: CONNECTIONS, duration: SECONDS, headers: { authorization: auth } });
  return { rps: r.requests.total / r.duration, p50: r.latency.p50, p99: r.latency.p99, bad: r.errors + r.timeouts + r.non2xx };
}

async function main(): Promise<void> {
  const t = await startTarget();
  try {
    const hilt = t.hilt;
    await call(hilt, 'PUT', '/project/bp', ADMIN);
    await call(hilt, 'PUT', `/auth/basic/user/${MEMBER.user}`, ADMIN, { password: MEMBER.password });
    await call(hilt, 'POST', `/auth/basic/user/${MEMBER.user}/add_project`, ADMIN, { project: 'bp' });
    for (let i = 0; i < 50; i++) {
      await call(hilt, 'PUT', `/node/bn${i}`, ADMIN, { obm: { type: 'http://schema.massopencloud.org/haas/v0/obm/mock', host: 'h', user: 'u', password: 'p' } });
      await call(hilt, 'POST', '/project/bp/connect_node', ADMIN, { node: `bn${i}` });
    }
    const basic = 'Basic ' + Buffer.from(`${MEMBER.user}:${MEMBER.password}`).toString('base64');
    const token = (await call(hilt, 'POST', '/auth/tokens', basic, { expires_in: 3600, description: 'bench' })).body.token as string;
    const bearer = `Bearer ${token}`;
    const url = `${hilt}/project/bp/nodes`;
    // Warm up both paths (the basic credential is verified once here and remembered after).
    await load(url, basic);
    await load(url, bearer);
    const rows: string[] = [];
    const sum = { basic: 0, bearer: 0 };
    for (let i = 0; i < ROUNDS; i++) {
      for (const [name, auth] of (i % 2 ? [['bearer', bearer], ['basic', basic]] : [['basic', basic], ['bearer', bearer]]) as [keyof typeof sum, string][]) {
        const r = await load(url, auth);
        if (r.bad) throw new Error(`${name}: ${r.bad} requests failed; the figures are not valid`);
        sum[name] += r.rps;
        rows.push(`round ${i + 1}  ${name.padEnd(7)} ${Math.round(r.rps).toString().padStart(7)} req/s  p50 ${r.p50} ms  p99 ${r.p99} ms`);
      }
    }
    console.log(`auth cost: GET /project/<p>/nodes (50 nodes), ${CONNECTIONS} connections, ${ROUNDS} rounds of ${SECONDS} s each, alternating`);
    for (const r of rows) console.log(r);
    const ratio = sum.basic / sum.bearer;
    console.log(`basic (remembered) ${Math.round(sum.basic / ROUNDS)} req/s, bearer token ${Math.round(sum.bearer / ROUNDS)} req/s: cost ratio bearer/basic ${ratio.toFixed(3)} (target <= 1.1)`);
  } finally {
    await t.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
