/**
 * Two builds of hilt, alternating, on one scenario: each round starts each build's
 * bench/target.js (its own hilt and bare route) and measures the bare route and the scenario
 * in turn, with this build's driver. On a machine shared with other work the rounds swing; the
 * medians of the ratio and of the service's CPU per request are the figures.
 *
 *   node dist/bench/alternate.js <show|register> <worktree A> <worktree B> [rounds]
 *   (BENCH_SECONDS, BENCH_CONNECTIONS, BENCH_NODES, BENCH_WARMUP_SECONDS as for npm run bench; each worktree built)
 *
 * A worktree may be written `DIR@FLAGS` (FLAGS: the service's node flags, spaces as commas, in
 * place of BENCH_NODE_FLAGS), so one build can alternate with itself under other V8 flags:
 *   node dist/bench/alternate.js show .@--max-semi-space-size=16 .@--max-semi-space-size=64
 */
import { join } from 'node:path';
import { Figure, paired, registerRequests, run, showRequests, startTarget, WARMUP } from './inventory';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const NODES = Number(process.env.BENCH_NODES ?? 10_000);

interface Round { ratio: number; cpu: number; bareCpu: number }

async function round(scenario: string, spec: string): Promise<Round> {
  const [tree, flags] = spec.split('@');
  const t = await startTarget({}, join(tree, 'dist/bench/target.js'), flags?.split(','));
  const ok = (f: Figure) => {
    if (f.errors || f.non2xx) throw new Error(`${f.name}: ${f.errors + f.non2xx} requests failed`);
    return f;
  };
  try {
    let p;
    if (scenario === 'show') {
      await run('seed', { url: t.hilt, amount: NODES, requests: registerRequests('n') });
      // The bare route gets the same-shape requests, built the same way (bench/inventory.ts says why).
      const bareShow = showRequests(NODES, t.bare);
      const show = showRequests(NODES);
      await run('warm-up', { url: t.bare, duration: WARMUP, requests: bareShow });
      await run('warm-up', { url: t.hilt, duration: WARMUP, requests: show });
      p = await paired(['bare', 'show_node'], () => ({ url: t.bare, duration: SECONDS, connections: CONNECTIONS, requests: bareShow }),
        () => ({ url: t.hilt, duration: SECONDS, connections: CONNECTIONS, requests: show }), t.pid, 1);
    } else {
      const bareUrl = t.bare.replace(/\/bare$/, '');
      await run('warm-up', { url: bareUrl, duration: WARMUP, connections: CONNECTIONS, requests: registerRequests('b', '/bare') });
      await run('warm-up', { url: t.hilt, duration: WARMUP, connections: CONNECTIONS, requests: registerRequests('w') });
      const reg = registerRequests('n');
      p = await paired(['bare PUT', 'node_register'], () => ({ url: bareUrl, duration: SECONDS, connections: CONNECTIONS, requests: registerRequests('c', '/bare') }),
        () => ({ url: t.hilt, duration: SECONDS, connections: CONNECTIONS, requests: reg }), t.pid, 1);
    }
    const bare = ok(p.bare);
    const hilt = ok(p.hilt);
    return { ratio: hilt.rps / bare.rps, cpu: hilt.cpuUs!, bareCpu: bare.cpuUs! };
  } finally {
    await t.stop();
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main(): Promise<void> {
  // More than two worktrees (or flag sets) may be given: each round runs them all in turn.
  const [scenario, ...rest] = process.argv.slice(2);
  const rounds = /^\d+$/.test(rest[rest.length - 1] ?? '') ? Number(rest.pop()) : 4;
  const trees = rest;
  if (!['show', 'register'].includes(scenario) || trees.length < 2) throw new Error('usage: alternate.js <show|register> <worktree A> <worktree B> [more worktrees] [rounds]');
  const got: Record<string, Round[]> = Object.fromEntries(trees.map((t) => [t, []]));
  for (let r = 0; r < rounds; r++) {
    for (const tree of trees) {
      const x = await round(scenario, tree);
      got[tree].push(x);
      console.log(`round ${r + 1} ${tree}: ratio ${x.ratio.toFixed(2)}, ${x.cpu.toFixed(0)} us CPU per request (bare ${x.bareCpu.toFixed(0)})`);
    }
  }
  for (const tree of trees) {
    const xs = got[tree];
    console.log(`${tree}: ratio median ${median(xs.map((x) => x.ratio)).toFixed(2)} (${Math.min(...xs.map((x) => x.ratio)).toFixed(2)}–${Math.max(...xs.map((x) => x.ratio)).toFixed(2)}), ` +
      `CPU per request median ${median(xs.map((x) => x.cpu)).toFixed(0)} us (bare ${median(xs.map((x) => x.bareCpu)).toFixed(0)} us)`);
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
