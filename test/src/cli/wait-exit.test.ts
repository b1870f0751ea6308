/**
 * --wait (DONE and ERROR, with the mock switch's failure injection) and the exit codes:
 * 0 success, 1 a 4xx answer, 2 usage, 3 a 5xx answer, an unreachable server or an operation in ERROR.
 */
import { expect } from 'chai';
import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { startTestServer, stopTestServer, TestServer, Client, must, makeNode, mockSwitch } from '../../helpers/server';
import { freePort } from '../../helpers/process';
import { cliFor, hilt, rows, CLI } from '../../helpers/cli';
import { spawn } from 'node:child_process';
import { until } from '../../helpers/wait';

describe('hilt --wait and exit codes', function () {
  this.timeout(60_000);
  let ts: TestServer;
  let api: Client;
  let cli: ReturnType<typeof cliFor>;
  before(async () => {
    // gi1/0/9 fails every switch operation; each operation takes 1 s, so --wait sees PENDING, and so does a command run after one without --wait, even on a loaded machine.
    ts = await startTestServer({ mockSwitchFailPorts: ['s1/gi1/0/9'], mockSwitchDelayMs: 1000, obmTimeoutMs: 2000 });
    api = ts.api;
    cli = cliFor(ts.url);
    await must(api.put('/project/p'));
    await must(api.put('/switch/s1', mockSwitch));
    for (const [node, port] of [['ok', 'gi1/0/1'], ['bad', 'gi1/0/9']]) {
      await makeNode(api, node, ['eth0']);
      await must(api.put(`/switch/s1/port/${port}`));
      await must(api.post(`/switch/s1/port/${port}/connect_nic`, { node, nic: 'eth0' }));
      await must(api.post('/project/p/connect_node', { node }));
    }
    await must(api.put('/network/w', { owner: 'p', access: 'p', net_id: '' }));
  });
  after(() => stopTestServer(ts));

  describe('--wait', () => {
    it('connect --wait follows the operation to DONE: progress lines on stderr (not a terminal), the final status on stdout, exit 0', async () => {
      const r = await cli.run('node', 'network', 'connect', 'ok', 'eth0', 'w', '--wait');
      expect(r.code, r.stderr).to.equal(0);
      const t = rows(r.stdout);
      expect(t).to.deep.include.members([['Node', 'ok'], ['NIC', 'eth0'], ['New Network', 'w'], ['Status', 'DONE']]);
      const lines = r.stderr.trim().split('\n');
      expect(lines[0]).to.match(/^hilt: waiting for connect ok eth0 to w \(.+\)$/);
      expect(lines.filter((l) => /^hilt: connect ok eth0 to w: PENDING \(\d+\.\ds\)$/.test(l)), 'one line per change of status').to.have.length(1);
      expect(lines[lines.length - 1]).to.match(/^hilt: connect ok eth0 to w: DONE after \d+\.\ds$/);
      expect(r.stderr, 'no terminal codes when not a terminal').to.not.match(/\x1b|\r/);
      expect((await api.get('/node/ok')).body.nics[0].networks).to.deep.equal({ 'vlan/native': 'w' });
    });

    it('detach --wait --json prints the final status as the server gives it', async () => {
      const r = await cli.run('node', 'network', 'detach', 'ok', 'eth0', 'w', '--wait', '--json');
      expect(r.code).to.equal(0);
      const body = JSON.parse(r.stdout);
      expect(body).to.deep.include({ status: 'DONE', node: 'ok', nic: 'eth0', new_network: null });
      expect((await api.get('/node/ok')).body.nics[0].networks).to.deep.equal({});
    });

    it('connect --wait on a failing port: ERROR with its reason, exit 3, nothing attached', async () => {
      const r = await cli.run('node', 'network', 'connect', 'bad', 'eth0', 'w', '--wait');
      expect(r.code).to.equal(3);
      const t = rows(r.stdout);
      expect(t).to.deep.include(['Status', 'ERROR']);
      const reason = t.find((x) => x[0] === 'Error')![1];
      expect(reason).to.be.a('string').and.not.empty;
      expect(r.stderr).to.include('hilt: connect bad eth0 to w failed: ');
      expect(r.stderr).to.match(/mock switch|fail/i);
      expect((await api.get('/node/bad')).body.nics[0].networks).to.deep.equal({});
      const j = await cli.run('port', 'revert', 's1', 'gi1/0/9', '--wait', '--json');
      expect(j.code).to.equal(3);
      expect(JSON.parse(j.stdout)).to.deep.include({ status: 'ERROR', type: 'revert_port' });
    });

    it('Ctrl-C stops the waiting, not the operation: exit 130, and how to look the operation up later', async () => {
      const id = '0123456789abcdef0123456789abcdef';
      const slow = createServer((req, res) => {
        res.writeHead(req.method === 'POST' ? 202 : 200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(req.method === 'POST' ? { status_id: id } : { status: 'PENDING', node: 'n1', nic: 'eth0', type: 'modify_port', channel: 'vlan/native', new_network: 'net' }));
      });
      await new Promise<void>((r) => slow.listen(0, '127.0.0.1', r));
      try {
        const child = spawn(process.execPath, [CLI, 'node', 'network', 'connect', 'n1', 'eth0', 'net', '--wait'], {
          env: { PATH: process.env.PATH, HOME: process.env.HOME, HIL_ENDPOINT: `http://127.0.0.1:${(slow.address() as AddressInfo).port}`, HIL_USERNAME: 'u', HIL_PASSWORD: 'u-pw' },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let stderr = '';
        child.stderr.on('data', (d) => (stderr += d));
        const exited = new Promise<number | null>((r) => child.on('close', r));
        await until('the wait begun', () => /PENDING/.test(stderr));
        child.kill('SIGINT');
        expect(await exited, stderr).to.equal(130);
        expect(stderr).to.include(`hilt: stopped waiting; the operation goes on: hilt networking-action show ${id}\n`);
      } finally {
        await new Promise<void>((r) => slow.close(() => r()));
      }
    });

    it('a server that fails or goes away while --wait polls: exit 3, and how to look the operation up later', async () => {
      const id = '0123456789abcdef0123456789abcdef';
      let polls = 0;
      let then: 'fail' | 'drop' = 'fail';
      const flaky = createServer((req, res) => {
        if (req.url === '/node/n1/nic/eth0/connect_network') {
          res.writeHead(202, { 'content-type': 'application/json' });
          return res.end(JSON.stringify({ status_id: id }));
        }
        // The first poll is PENDING; then the service is in trouble (503), or the connection drops.
        if (polls++ === 0) {
          res.writeHead(200, { 'content-type': 'application/json' });
          return res.end(JSON.stringify({ status: 'PENDING', node: 'n1', nic: 'eth0', type: 'modify_port', channel: 'vlan/native', new_network: 'net' }));
        }
        if (then === 'drop') return req.socket.destroy();
        res.writeHead(503, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ type: 'ServiceUnavailableError', msg: 'standing by' }));
      });
      await new Promise<void>((r) => flaky.listen(0, '127.0.0.1', r));
      const url = `http://127.0.0.1:${(flaky.address() as AddressInfo).port}`;
      const hint = `; the operation goes on: hilt networking-action show ${id}\n`;
      try {
        const failed = await hilt(url, ['node', 'network', 'connect', 'n1', 'eth0', 'net', '--wait']);
        expect(failed.code, failed.stderr).to.equal(3);
        expect(failed.stderr).to.include(`hilt: ServiceUnavailableError: standing by${hint}`);
        [polls, then] = [0, 'drop'];
        const dropped = await hilt(url, ['node', 'network', 'connect', 'n1', 'eth0', 'net', '--wait']);
        expect(dropped.code, dropped.stderr).to.equal(3);
        expect(dropped.stderr).to.include(`hilt: cannot reach ${url}: ECONNRESET${hint}`);
      } finally {
        await new Promise<void>((r) => flaky.close(() => r()));
      }
    });

    it('without --wait: the status id only, at once', async () => {
      const r = await cli.run('node', 'network', 'connect', 'ok', 'eth0', 'w');
      expect(r.code).to.equal(0);
      const id = rows(r.stdout)[1][1];
      expect((await must(api.get(`/networking_action/${id}`))).body.status).to.equal('PENDING');
      const s = await cli.run('networking-action', 'show', id);
      expect(rows(s.stdout)).to.deep.include(['Status', 'PENDING']);
    });
  });

  describe('exit codes', () => {
    it('0 for success, 1 for a 4xx answer with its type and message on stderr and nothing on stdout', async () => {
      expect((await cli.run('project', 'list')).code).to.equal(0);
      for (const [args, type] of [
        [['node', 'show', 'nope'], 'NotFoundError'],
        [['project', 'create', 'p'], 'DuplicateError'],
        [['node', 'delete', 'ok'], 'BlockedError'],
      ] as const) {
        const r = await cli.run(...args);
        expect(r.code, args.join(' ')).to.equal(1);
        expect(r.stdout).to.equal('');
        expect(r.stderr).to.match(new RegExp(`^hilt: ${type}: .+\\n$`));
      }
      const anon = await hilt(ts.url, ['project', 'list'], { as: null });
      expect(anon.code).to.equal(1);
      expect(anon.stderr).to.match(/AuthorizationError/);
    });

    it('2 for usage errors: unknown command or option, missing argument, bad choice, no command', async () => {
      for (const args of [['nodes', 'list'], ['node', 'list'], ['node', 'list', 'busy'], ['node', 'show', 'n', '--bogus'], ['user', 'set-admin', 'u', 'root'], [],
        // A page of the audit log is at most 1,000 entries (a journal may be longer).
        ['admin', 'audit', '--limit', '5000'], ['networking-action', 'list', '--limit', 'all'], ['networking-action', 'list', '--limit', '1001']]) {
        const r = await cli.run(...args);
        expect(r.code, args.join(' ')).to.equal(2);
        expect(r.stdout, args.join(' ')).to.equal('');
        expect(r.stderr, args.join(' ')).to.not.equal('');
      }
      const bad = await hilt('not a url', ['project', 'list']);
      expect(bad.code).to.equal(2);
      expect(bad.stderr).to.match(/not a URL/);
    });

    it('2 for an endpoint that is no http URL, without echoing the password it holds', async () => {
      for (const endpoint of ['htp://ops:endpoint-pw-4321@127.0.0.1:5000', 'http://ops:endpoint-pw-4321@127.0.0.1:bad']) {
        const r = await hilt(endpoint, ['project', 'list']);
        expect(r.code, endpoint).to.equal(2);
        expect(r.stderr, endpoint).to.match(/endpoint/);
        expect(r.stderr, endpoint).to.not.include('endpoint-pw-4321');
      }
    });

    it('2 for an option hilt does not have given with its value (--password=…), without echoing the value', async () => {
      for (const args of [['node', 'list', 'all', '--password=opt-pw-8765'], ['--password=opt-pw-8765', 'project', 'list'], ['user', 'create', 'u', '-', 'regular', "--pass=opt-'pw-8765"], ['node', 'list', 'all', '--password=opt-\npw-8765']]) {
        const r = await cli.run(...args);
        expect(r.code, args.join(' ')).to.equal(2);
        expect(r.stderr, args.join(' ')).to.match(/unknown option '--pass(word)?=…'/);
        expect(r.stderr, args.join(' ')).to.not.match(/pw-8765/);
      }
    });

    it('0 for --help and --version, on stdout', async () => {
      const h = await cli.run('node', 'network', 'connect', '--help');
      expect(h.code).to.equal(0);
      expect(h.stdout).to.match(/Usage: hilt node network connect \[options\] <node> <nic> <network> \[channel\]/);
      expect(h.stdout).to.match(/--wait/);
      const v = await cli.run('--version');
      expect(v.code).to.equal(0);
      expect(v.stdout.trim()).to.match(/^\d+\.\d+\.\d+$/);
    });

    it('3 when the server cannot be reached', async () => {
      const port = await freePort();
      const r = await hilt(`http://127.0.0.1:${port}`, ['node', 'list', 'all']);
      expect(r.code).to.equal(3);
      expect(r.stderr).to.match(new RegExp(`^hilt: cannot reach http://127\\.0\\.0\\.1:${port}: ECONNREFUSED`));
    });

    it('3, and a plain reason, when the endpoint answers with a web page rather than the service\'s JSON', async () => {
      const page = createServer((req, res) => {
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        res.end('<!doctype html><title>welcome</title>');
      });
      await new Promise<void>((r) => page.listen(0, '127.0.0.1', r));
      try {
        const url = `http://127.0.0.1:${(page.address() as AddressInfo).port}`;
        for (const args of [['project', 'list'], ['node', 'show', 'n1'], ['node', 'network', 'connect', 'n1', 'eth0', 'net']]) {
          const r = await hilt(url, args);
          expect(r.code, args.join(' ')).to.equal(3);
          expect(r.stderr, args.join(' ')).to.equal(`hilt: ${url} answered ${args[0] === 'project' ? 'GET /projects' : args.length === 3 ? 'GET /node/n1' : 'POST /node/n1/nic/eth0/connect_network'} with a web page, not the service's JSON: is it the service's address?\n`);
        }
      } finally {
        await new Promise<void>((r) => page.close(() => r()));
      }
    });

    it('3 for a redirect (a proxy sending http to https), not followed and said so, not a refusal (1) with the page', async () => {
      const proxy = createServer((req, res) => {
        res.writeHead(301, { location: `https://127.0.0.1:9${req.url}`, 'content-type': 'text/html' });
        res.end('<html><body>Moved Permanently</body></html>');
      });
      await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
      try {
        const url = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
        for (const [args, call] of [[['project', 'list'], 'GET /projects'], [['project', 'create', 'p9'], 'PUT /project/p9'], [['events', '--after', '1'], 'GET /events'], [['events', '--follow'], 'GET /events'], [['node', 'console', 'attach', 'n1'], 'GET /node/n1/console/stream']] as const) {
          const r = await hilt(url, [...args]);
          expect(r.code, args.join(' ')).to.equal(3);
          expect(r.stderr, args.join(' ')).to.match(new RegExp(`^hilt: ${url} answered ${call} with a redirect \\(301\\) to https://127\\.0\\.0\\.1:9/\\S*: hilt does not follow it; give the service's own address as the endpoint\n$`));
          expect(r.stdout).to.equal('');
        }
      } finally {
        await new Promise<void>((r) => proxy.close(() => r()));
      }
    });

    it('3, and a plain reason, for a 2xx answer that is not JSON (text, cut short, empty), not a stack trace', async () => {
      // What each call gets: plain text, a JSON text cut short, nothing at all.
      const bodies: Record<string, [string, string]> = {
        '/projects': ['text/plain', 'OK'],
        '/node/n1': ['application/json', '{"name": "n1", "nics": ['],
        '/node/n1/power_status': ['application/json', ''],
        '/node/n1/nic/eth0/connect_network': ['application/json', ''],
      };
      const odd = createServer((req, res) => {
        const [type, body] = bodies[req.url ?? ''] ?? ['application/json', ''];
        res.writeHead(200, { 'content-type': type });
        res.end(body);
      });
      await new Promise<void>((r) => odd.listen(0, '127.0.0.1', r));
      try {
        const url = `http://127.0.0.1:${(odd.address() as AddressInfo).port}`;
        for (const [args, call, what] of [
          [['project', 'list'], 'GET /projects', 'text that is not JSON'],
          [['node', 'show', 'n1'], 'GET /node/n1', 'text that is not JSON'],
          [['node', 'power', 'status', 'n1'], 'GET /node/n1/power_status', 'nothing'],
          [['node', 'network', 'connect', 'n1', 'eth0', 'net'], 'POST /node/n1/nic/eth0/connect_network', 'nothing'],
        ] as const) {
          const r = await hilt(url, [...args]);
          expect(r.code, args.join(' ')).to.equal(3);
          expect(r.stderr, args.join(' ')).to.equal(`hilt: ${url} answered ${call} with ${what} where the service answers JSON: is it the service's address?\n`);
          expect(r.stdout, args.join(' ')).to.equal('');
        }
      } finally {
        await new Promise<void>((r) => odd.close(() => r()));
      }
    });

    it('3, and one line naming the call, for JSON of another shape ({} for a list, a list for an object, null, a number, a nic without networks), not a stack trace', async () => {
      let body = '{}';
      const odd = createServer((req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        // The operation a --wait follows answers no status: that is no success.
        if (req.url?.startsWith('/networking_action/')) return res.end('{}');
        if (req.url?.endsWith('/connect_network') && body === '"wait"') return res.end('{"status_id": "0123456789abcdef0123456789abcdef"}');
        res.end(body);
      });
      await new Promise<void>((r) => odd.listen(0, '127.0.0.1', r));
      try {
        const url = `http://127.0.0.1:${(odd.address() as AddressInfo).port}`;
        const cases: [string, string[], string][] = [];
        for (const b of ['{}', '[]', 'null', '5']) {
          cases.push([b, ['node', 'show', 'n1'], 'GET /node/n1'], [b, ['node', 'list', 'all'], 'GET /nodes/all/details'],
            [b, ['node', 'network', 'connect', 'n1', 'eth0', 'net'], 'POST /node/n1/nic/eth0/connect_network'],
            [b, ['node', 'power', 'status', 'n1'], 'GET /node/n1/power_status'], [b, ['project', 'node', 'remove', 'p', 'n1', '--force'], 'GET /node/n1']);
          if (b !== '[]') cases.push([b, ['project', 'list'], 'GET /projects'], [b, ['switch', 'list'], 'GET /switches/details']);
        }
        cases.push(['{"name": "n1", "project": null, "nics": [{"label": "eth0", "macaddr": "aa"}]}', ['node', 'show', 'n1'], 'GET /node/n1'],
          ['"wait"', ['node', 'network', 'connect', 'n1', 'eth0', 'net', '--wait'], 'GET /networking_action/0123456789abcdef0123456789abcdef']);
        for (const [b, args, call] of cases) {
          body = b;
          const r = await hilt(url, args);
          const what = `${args.join(' ')} given ${b}`;
          expect(r.code, what).to.equal(3);
          expect(r.stderr.split('\n').filter((l) => !l.startsWith('hilt: waiting for') && l !== ''), what)
            .to.have.length(1).and.to.match(new RegExp(`^hilt: ${url} answered ${call} with JSON that is not what this command reads( \\(.*\\))?: is it the service's address`));
          // The TypeError's words may stay in the parentheses (they say where, were it hilt's bug); no stack.
          expect(r.stderr, what).to.not.match(/unexpected failure|\n\s+at /);
          expect(r.stdout, what).to.equal('');
        }
      } finally {
        await new Promise<void>((r) => odd.close(() => r()));
      }
    });

    it('reads the JSON of HIL\'s server, which sends it as its web framework\'s text/html, and a console log as the text it is', async () => {
      const hil = createServer((req, res) => {
        // Flask's default type for the string a view returns.
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        if (req.url === '/projects') return res.end('["p2", "p1"]');
        if (req.url === '/node/n1/nic/eth0/connect_network') return res.end('{"status_id": "0123456789abcdef0123456789abcdef"}');
        if (req.url === '/node/n1/console') return res.end('login: <no echo>\n');
        res.end('');
      });
      await new Promise<void>((r) => hil.listen(0, '127.0.0.1', r));
      try {
        const url = `http://127.0.0.1:${(hil.address() as AddressInfo).port}`;
        const projects = await hilt(url, ['project', 'list']);
        expect([projects.code, projects.stderr]).to.deep.equal([0, '']);
        expect(rows(projects.stdout)).to.deep.equal([['Projects (2)'], ['p1'], ['p2']]);
        const connect = await hilt(url, ['node', 'network', 'connect', 'n1', 'eth0', 'net']);
        expect([connect.code, connect.stderr]).to.deep.equal([0, '']);
        expect(rows(connect.stdout)[1]).to.deep.equal(['Status ID', '0123456789abcdef0123456789abcdef']);
        const log = await hilt(url, ['node', 'console', 'show', 'n1']);
        expect([log.code, log.stderr, log.stdout]).to.deep.equal([0, '', 'login: <no echo>\n']);
        const change = await hilt(url, ['project', 'create', 'p3']);
        expect([change.code, change.stderr, change.stdout]).to.deep.equal([0, '', '']);
      } finally {
        await new Promise<void>((r) => hil.close(() => r()));
      }
    });

    describe('3 for a 5xx answer', () => {
      let fake: Server;
      let url: string;
      before(async () => {
        // A stand-in for a server in trouble: 503 with hilt's error body, 500 without a body.
        fake = createServer((req, res) => {
          if (req.url === '/projects') {
            res.writeHead(503, { 'content-type': 'application/json' });
            res.end(JSON.stringify({ type: 'ServiceUnavailableError', msg: 'storage refused the change' }));
          } else {
            res.writeHead(500);
            res.end();
          }
        });
        await new Promise<void>((r) => fake.listen(0, '127.0.0.1', r));
        url = `http://127.0.0.1:${(fake.address() as AddressInfo).port}`;
      });
      after(() => new Promise<void>((r) => fake.close(() => r())));

      it('with the error body: its type and message', async () => {
        const r = await hilt(url, ['project', 'list']);
        expect(r.code).to.equal(3);
        expect(r.stderr).to.equal('hilt: ServiceUnavailableError: storage refused the change\n');
        expect(r.stdout).to.equal('');
      });
      it('without one: the status', async () => {
        const r = await hilt(url, ['node', 'list', 'all']);
        expect(r.code).to.equal(3);
        expect(r.stderr).to.match(/^hilt: HTTP 500: /);
      });
      it('a 502 of a BMC from the real server (power status of an IPMI node whose BMC is not there)', async function () {
        await must(api.put('/node/ipmi', { obm: { type: 'http://schema.massopencloud.org/haas/v0/obm/ipmi', host: `127.0.0.1:${await freePort()}`, user: 'u', password: 'p' } }));
        const r = await cli.run('node', 'power', 'status', 'ipmi');
        expect(r.code, r.stderr).to.equal(3);
        expect(r.stderr).to.match(/^hilt: OBMError: /);
      });
    });
  });
});
