/**
 * OpenID Connect bearer tokens (docs/identity.md) against a local issuer over HTTPS with a test
 * CA (test/helpers/oidc-issuer.ts): a good token; a wrong signature, issuer or audience, an
 * expired or not yet valid token, `alg: none`, an unknown key id; key rotation at the issuer;
 * groups mapped to admin, auditor, member and reader.
 */
import { expect } from 'chai';
import { startTestServer, stopTestServer, TestServer, Client, must, makeNode, obm } from '../../helpers/server';
import { startIssuer, TestIssuer, SigningKey } from '../../helpers/oidc-issuer';
import { addSecret } from '../../helpers/secrets';
import { watch, Watcher } from '../../helpers/console-ws';
import { until } from '../../helpers/wait';
import { SseStream } from '../../helpers/sse';
import { OidcVerifier } from '../../../src/auth/oidc';
import { DEFAULTS } from '../../../src/config';
import { ReadModel } from '../../../actors/readmodel';
import { loggerOptions } from '../../../src/redact';
import { createPublicKey, type KeyObject } from 'node:crypto';
import { SignJWT } from 'jose';
import type { ServerResponse } from 'node:http';

const b64 = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');

describe('OpenID Connect bearer tokens', function () {
  this.timeout(60_000);
  let ts: TestServer;
  let issuer: TestIssuer;
  let rsa: SigningKey;
  let ec: SigningKey;
  let api: Client;
  const now = () => Math.floor(Date.now() / 1000);

  before(async () => {
    issuer = await startIssuer();
    rsa = await issuer.newKey('RS256');
    ec = await issuer.newKey('ES256');
    issuer.published.push(rsa, ec);
    ts = await startTestServer({ oidcIssuer: issuer.url, oidcAudience: 'hilt', oidcCaFile: issuer.caFile });
    api = ts.api;
    for (const p of ['op1', 'op2']) await must(api.put(`/project/${p}`));
    await makeNode(api, 'on1');
    await must(api.post('/project/op1/connect_node', { node: 'on1' }));
  });
  after(() => stopTestServer(ts));

  const as = async (key: SigningKey, claims: Record<string, unknown>, header?: Record<string, unknown>) => {
    const token = await issuer.token(key, claims, header);
    addSecret(token);
    return api.with({ token });
  };

  it('accepts a token the issuer signed (RS256 and ES256): its user needs no record here, and is named in the audit log', async () => {
    const admin = await as(rsa, { preferred_username: 'oidc-ada', groups: ['hilt-admins'] });
    expect((await admin.get('/projects')).status).to.equal(200);
    await must(admin.put('/project/op-made'));
    const audit = await must(api.get('/admin/audit?kind=project&name=op-made'));
    expect(audit.body.entries[0].by).to.equal('oidc-ada');
    expect((await api.get('/auth/basic/user/oidc-ada')).status).to.equal(404);
    expect((await (await as(ec, { preferred_username: 'oidc-ec', groups: ['hilt-admins'] })).get('/projects')).status).to.equal(200);
  });

  it('refuses a wrong signature, issuer or audience, an expired or not yet valid token, alg none and an unknown key id: 401, as a wrong password', async () => {
    const claims = { preferred_username: 'oidc-bad', groups: ['hilt-admins'] };
    const forged = await issuer.newKey('RS256', rsa.kid);
    const unknown = await issuer.newKey('RS256');
    const good = await issuer.token(rsa, claims);
    const [h, p] = good.split('.');
    const cases: Record<string, string> = {
      'wrong signature': await issuer.token(forged, claims),
      'wrong issuer': await issuer.token(rsa, { ...claims, iss: 'https://127.0.0.1:1' }),
      'wrong audience': await issuer.token(rsa, { ...claims, aud: 'another-service' }),
      expired: await issuer.token(rsa, { ...claims, exp: now() - 120 }),
      'not yet valid': await issuer.token(rsa, { ...claims, nbf: now() + 120 }),
      'no exp': await issuer.token(rsa, { ...claims, exp: undefined }),
      'alg none': `${b64({ alg: 'none', typ: 'JWT' })}.${p}.`,
      'alg HS256 with the public key': `${b64({ alg: 'HS256', kid: rsa.kid })}.${p}.${Buffer.from('x').toString('base64url')}`,
      'a changed payload': `${h}.${b64({ ...JSON.parse(Buffer.from(p, 'base64url').toString()), groups: ['hilt-admins', 'x'] })}.${good.split('.')[2]}`,
      'unknown key id': await issuer.token(unknown, claims),
      'no user claim': await issuer.token(rsa, { groups: ['hilt-admins'] }),
      'a user claim that is no name': await issuer.token(rsa, { preferred_username: 'bad\u0001name', groups: ['hilt-admins'] }),
      'a user claim that names the service itself': await issuer.token(rsa, { preferred_username: 'hilt', groups: ['hilt-admins'] }),
    };
    for (const [what, token] of Object.entries(cases)) {
      addSecret(token);
      const r = await api.with({ token }).get('/nodes/all');
      expect(r.status, what).to.equal(401);
      expect(r.body, what).to.deep.equal({ type: 'AuthorizationError', msg: 'invalid or expired token' });
    }
    // Within the 60 s of leeway: still good.
    expect((await (await as(rsa, { ...claims, exp: now() - 30, nbf: now() + 30 })).get('/nodes/all')).status).to.equal(200);
  });

  it('maps groups: admin, auditor, member of P, reader of P; a group naming no project gives nothing', async () => {
    const auditor = await as(rsa, { preferred_username: 'oidc-aud', groups: ['hilt-auditors'] });
    expect((await auditor.get('/projects')).status).to.equal(200);
    expect((await auditor.get('/admin/audit')).status).to.equal(200);
    expect((await auditor.put('/project/op-no')).status).to.equal(403);

    const member = await as(rsa, { preferred_username: 'oidc-mem', groups: ['hilt-project-op1', 'unrelated'] });
    expect((await member.get('/project/op1/nodes')).body).to.deep.equal(['on1']);
    expect((await member.get('/project/op2/nodes')).status).to.equal(401);
    expect((await member.get('/projects')).status).to.equal(401);
    await must(member.put('/network/onet', { owner: 'op1', access: 'op1', net_id: '' }));

    const reader = await as(rsa, { preferred_username: 'oidc-read', groups: ['hilt-project-op1-readers'] });
    expect((await reader.get('/project/op1/nodes')).body).to.deep.equal(['on1']);
    expect((await reader.get('/node/on1')).status).to.equal(200);
    const r = await reader.post('/project/op1/detach_node', { node: 'on1' });
    expect(r.status).to.equal(403);
    expect((await reader.get('/project/op2/nodes')).status).to.equal(401);

    const nobody = await as(rsa, { preferred_username: 'oidc-none', groups: ['hilt-project-nosuch', 'hilt-project-nosuch-readers'] });
    expect((await nobody.get('/nodes/all')).status).to.equal(200);
    expect((await nobody.get('/project/op1/nodes')).status).to.equal(401);
    // Such a project made later counts from then on.
    await must(api.put('/project/nosuch'));
    expect((await nobody.get('/project/nosuch/nodes')).status).to.equal(200);

    // Another claim names the user and the groups when configured so (a unit of the same code: below).
    expect((await (await as(rsa, { preferred_username: 'oidc-t', groups: 'hilt-admins' })).get('/projects')).status, 'groups must be a list').to.equal(401);
  });

  it('a dashboard session opened with a token maps its groups at each request, as the API does: a project made or deleted later counts at once', async () => {
    const token = await issuer.token(rsa, { preferred_username: 'oidc-later', groups: ['hilt-project-olater', 'hilt-project-oread-readers'] });
    addSecret(token);
    const login = await must(api.call('POST', '/ui/api/login', { as: null, body: { token } }));
    const cookie = String([login.headers['set-cookie']].flat()[0]).split(';')[0];
    const me = async () => (await must(api.call('GET', '/ui/api/me', { as: null, headers: { cookie } }))).body as { projects: string[]; reads: string[] };
    expect(login.body).to.include({ via: 'oidc' });
    expect(await me()).to.deep.include({ projects: [], reads: [] });
    for (const p of ['olater', 'oread']) await must(api.put(`/project/${p}`));
    // The API with the same token, and the session, agree.
    expect((await api.with({ token }).get('/project/olater/nodes')).status).to.equal(200);
    expect(await me()).to.deep.include({ projects: ['olater'], reads: ['oread'] });
    await must(api.del('/project/olater'));
    expect(await me()).to.deep.include({ projects: [], reads: ['oread'] });
  });

  it('an OpenID Connect caller has no API tokens of its own here', async () => {
    const admin = await as(rsa, { preferred_username: 'oidc-tok', groups: ['hilt-admins'] });
    expect((await admin.post('/auth/tokens', {})).status).to.equal(403);
    expect((await admin.get('/auth/tokens')).status).to.equal(403);
  });

  it('an OpenID Connect admin lists and revokes a database user\'s tokens (a leaked one must be revocable); a member may not', async () => {
    await must(api.put('/auth/basic/user/on-tok', { password: 'on-tok-pw-1', 'is-admin': false }));
    const owner = api.with({ user: 'on-tok', password: 'on-tok-pw-1' });
    const made = (await must(owner.post('/auth/tokens', { description: 'leaked' }))).body as { id: string; token: string };
    addSecret(made.token);
    expect((await api.with({ token: made.token }).get('/auth/tokens')).status, 'the token works').to.equal(200);
    const member = await as(rsa, { preferred_username: 'on-tok', groups: ['hilt-project-op1'] });
    expect((await member.get('/auth/tokens?user=on-tok')).status).to.equal(401);
    expect((await member.del(`/auth/tokens/${made.id}`)).status, 'its namesake is not the owner').to.equal(403);
    const admin = await as(rsa, { preferred_username: 'oidc-admin', groups: ['hilt-admins'] });
    const listed = await must(admin.get('/auth/tokens?user=on-tok'));
    expect(listed.body.map((t: { id: string }) => t.id)).to.deep.equal([made.id]);
    await must(admin.del(`/auth/tokens/${made.id}`));
    expect((await api.with({ token: made.token }).get('/auth/tokens')).status, 'revoked').to.equal(401);
    expect((await must(owner.get('/auth/tokens'))).body).to.deep.equal([]);
  });

  it('a user of the database with the same name is another identity: its record is not the OpenID Connect user\'s to read, nor its own to spare', async () => {
    await must(api.put('/auth/basic/user/on-bob', { password: 'on-bob-pw-1', 'is-admin': true }));
    await must(api.post('/auth/basic/user/on-bob/add_project', { project: 'op2' }));
    const namesake = await as(rsa, { preferred_username: 'on-bob', groups: [] });
    const r = await namesake.get('/auth/basic/user/on-bob');
    expect(r.status, r.text).to.equal(401);
    expect(r.text).to.not.include('op2');
    // An OpenID Connect admin of that name changes the database user's role as any admin may:
    // it is not "its own".
    const admin = await as(rsa, { preferred_username: 'on-bob', groups: ['hilt-admins'] });
    expect((await admin.get('/auth/basic/user/on-bob')).body.projects).to.deep.equal({ op2: 'member' });
    await must(admin.call('PATCH', '/auth/basic/user/on-bob', { body: { is_admin: false } }));
    expect((await must(api.get('/auth/basic/user/on-bob'))).body.is_admin).to.equal(false);
    // The database user still reads its own record.
    expect((await must(api.with({ user: 'on-bob', password: 'on-bob-pw-1' }).get('/auth/basic/user/on-bob'))).body.name).to.equal('on-bob');
  });
});

describe('an OpenID Connect reader of a project on its node\'s live console (the API\'s and the dashboard\'s)', function () {
  this.timeout(60_000);
  let ts: TestServer;
  let issuer: TestIssuer;
  let rsa: SigningKey;
  let api: Client;
  let token: string;
  /** the dashboard's session cookie of a login with the token */
  let cookie: string;
  const pwReader = { user: 'oc-pw-reader', password: 'oc-pw-reader-pw-1' };

  before(async () => {
    issuer = await startIssuer();
    rsa = await issuer.newKey('RS256');
    issuer.published.push(rsa);
    ts = await startTestServer({ oidcIssuer: issuer.url, oidcAudience: 'hilt', oidcCaFile: issuer.caFile });
    api = ts.api;
    for (const p of ['oc-p', 'oc-q']) await must(api.put(`/project/${p}`));
    await must(api.put('/node/oc-n1', { obm: obm('bmc-oc-n1') }));
    await must(api.post('/project/oc-p/connect_node', { node: 'oc-n1' }));
    // The same rights with a password: member of oc-q, reader of oc-p.
    await must(api.put(`/auth/basic/user/${pwReader.user}`, { password: pwReader.password }));
    await must(api.post(`/auth/basic/user/${pwReader.user}/add_project`, { project: 'oc-q' }));
    await must(api.post(`/auth/basic/user/${pwReader.user}/add_project`, { project: 'oc-p', role: 'reader' }));
    token = await issuer.token(rsa, { preferred_username: 'oc-oidc-reader', groups: ['hilt-project-oc-q', 'hilt-project-oc-p-readers'] });
    addSecret(token);
    const login = await must(api.call('POST', '/ui/api/login', { as: null, body: { token } }));
    cookie = String([login.headers['set-cookie']].flat()[0]).split(';')[0];
  });
  after(async () => {
    await stopTestServer(ts);
    await issuer.close();
  });

  /** The ways to the console: the API with a password or the token, the dashboard with the token's session. */
  const viewers: [string, () => Promise<Watcher>][] = [
    ['the password reader', () => watch(ts.url, 'oc-n1', pwReader)],
    ['the OpenID Connect reader', () => watch(ts.url, 'oc-n1', null, { authorization: `Bearer ${token}` })],
    ['the OpenID Connect reader on the dashboard', () => watch(ts.url, 'oc-n1', null, { cookie, origin: ts.url }, '/ui/api')],
  ];

  it('the reader may read the project but not change it (the REST API agrees for both)', async () => {
    const oidc = api.with({ token });
    expect((await oidc.get('/node/oc-n1')).status).to.equal(200);
    expect((await oidc.put('/node/oc-n1/console')).status, 'start_console by the OpenID Connect reader').to.equal(403);
    expect((await api.with(pwReader).put('/node/oc-n1/console')).status, 'start_console by the password reader').to.equal(403);
  });

  it('connecting to an unrecorded console is refused (starting the recording is a change), and so is the dashboard\'s "Start recording"', async () => {
    for (const [who, connect] of viewers) {
      // The API refuses the handshake; the dashboard's stream, which never starts a recording, closes with the reason.
      const got = await connect().then(async (w) => (await w.closed).code, (e: { status?: number }) => e.status);
      expect(got, who).to.equal(who.includes('dashboard') ? 4410 : 403);
    }
    const login = await must(api.call('GET', '/ui/api/me', { as: null, headers: { cookie } }));
    const start = await api.call('POST', '/ui/api/action', {
      as: null, headers: { cookie, origin: ts.url, 'x-csrf-token': (login.body as { csrf: string }).csrf }, body: { action: 'console_start', node: 'oc-n1' },
    });
    expect(start.status, 'console_start by the OpenID Connect reader on the dashboard').to.equal(403);
    expect(ts.app.hilt.world.rm.nodes.get('oc-n1')!.console).to.equal(undefined);
  });

  it('what the reader types on a recorded console does not reach the node', async () => {
    await must(api.put('/node/oc-n1/console'));
    for (const [who, connect] of viewers) {
      const w = await connect();
      await until('the banner', () => w.text().includes('mock serial console of bmc-oc-n1'));
      const typed = `typed-by-${who.replace(/ /g, '-')}`;
      w.send(`${typed}\r`);
      await until('the answer', () => w.text().includes(`${typed}\r\n`) || w.text().includes('[hilt] what you type is not sent'));
      w.ws.close();
      expect(w.text(), who).to.not.include(`${typed}\r\n`);
    }
  });
});

describe('OidcVerifier: the issuer\'s keys', function () {
  this.timeout(60_000);

  it('fetches the keys once, again for an unknown key id at most once a minute, and so picks up a key rotation', async () => {
    const issuer = await startIssuer('aud-x');
    const k1 = await issuer.newKey('ES256');
    issuer.published.push(k1);
    let clock = Date.now();
    const rm = new ReadModel();
    const v = new OidcVerifier({
      ...DEFAULTS, oidcIssuer: issuer.url, oidcAudience: 'aud-x', oidcCaFile: issuer.caFile,
      oidcUserClaim: 'email', oidcGroupsClaim: 'roles', oidcAdminGroup: 'ops',
    }, rm, { now: () => clock });
    try {
      const c = await v.verify(await issuer.token(k1, { email: 'ann@example.org', roles: ['ops'] }));
      expect(c).to.include({ user: 'ann@example.org', isAdmin: true });
      await v.verify(await issuer.token(k1, { email: 'ann@example.org' }));
      expect(issuer.jwksFetches).to.equal(1);

      // The issuer rotates: a new key, the old one gone.
      const k2 = await issuer.newKey('RS256');
      issuer.published.splice(0, 1, k2);
      const t2 = await issuer.token(k2, { email: 'bob@example.org' });
      clock += 10_000;
      // Fetched less than a minute ago: not again, so the new key is not known yet.
      await v.verify(t2).then(() => expect.fail('accepted'), (e: Error) => expect(e.name).to.equal('JWKSNoMatchingKey'));
      expect(issuer.jwksFetches).to.equal(1);
      clock += 60_000;
      expect((await v.verify(t2)).user).to.equal('bob@example.org');
      expect(issuer.jwksFetches).to.equal(2);
      // The old key is gone with the fetch.
      await v.verify(await issuer.token(k1, { email: 'ann@example.org' })).then(() => expect.fail('accepted'), (e: Error) => expect(e.name).to.equal('JWKSNoMatchingKey'));
      // A flood of made-up key ids: no fetch within the minute.
      const made = await issuer.newKey('RS256');
      for (let i = 0; i < 5; i++) await v.verify(await issuer.token(made, { email: 'x@example.org' })).catch(() => undefined);
      expect(issuer.jwksFetches).to.equal(2);
    } finally {
      await v.close();
      await issuer.close();
    }
  });

  it('a key the issuer no longer publishes is refused once the kept keys are ten minutes old (fetched again then, at most once a minute)', async () => {
    const issuer = await startIssuer('aud-z');
    const k1 = await issuer.newKey('ES256');
    issuer.published.push(k1);
    let clock = Date.now();
    const v = new OidcVerifier({ ...DEFAULTS, oidcIssuer: issuer.url, oidcAudience: 'aud-z', oidcCaFile: issuer.caFile }, new ReadModel(), { now: () => clock });
    const token = () => issuer.token(k1, { preferred_username: 'zed', iat: Math.floor(clock / 1000), exp: Math.floor(clock / 1000) + 300 });
    try {
      expect((await v.verify(await token())).user).to.equal('zed');
      // The issuer withdraws the key (say it leaked) and signs with no other yet: no token names an unknown key id.
      issuer.published.splice(0, 1);
      clock += 9 * 60_000;
      expect((await v.verify(await token())).user, 'within ten minutes the kept keys serve').to.equal('zed');
      expect(issuer.jwksFetches).to.equal(1);
      clock += 60_000;
      await v.verify(await token()).then(() => expect.fail('a withdrawn key was accepted'), (e: Error) => expect(e.name).to.equal('JWKSNoMatchingKey'));
      expect(issuer.jwksFetches).to.equal(2);
      // Many tokens meanwhile: no fetch storm.
      for (let i = 0; i < 5; i++) await v.verify(await token()).catch(() => undefined);
      expect(issuer.jwksFetches).to.equal(2);
    } finally {
      await v.close();
      await issuer.close();
    }
  });

  it('refuses an issuer whose certificate its CA does not sign (no HILT_OIDC_CA_FILE)', async () => {
    const issuer = await startIssuer('aud-y');
    const k = await issuer.newKey('ES256');
    issuer.published.push(k);
    const v = new OidcVerifier({ ...DEFAULTS, oidcIssuer: issuer.url, oidcAudience: 'aud-y' }, new ReadModel());
    try {
      await v.verify(await issuer.token(k, { preferred_username: 'u' })).then(() => expect.fail('accepted'), (e: Error) => expect(e.message).to.match(/certificate/));
      expect(issuer.jwksFetches).to.equal(0);
    } finally {
      await v.close();
      await issuer.close();
    }
  });
});

describe('OpenID Connect: what a token may not do (algorithms, claims, sizes), against a running server', function () {
  this.timeout(60_000);
  let ts: TestServer;
  let issuer: TestIssuer;
  let rsa: SigningKey;
  let ec: SigningKey;
  let api: Client;
  const lines: string[] = [];
  const tokens: string[] = [];
  const now = () => Math.floor(Date.now() / 1000);
  const BAD = { type: 'AuthorizationError', msg: 'invalid or expired token' };
  const sign = async (key: SigningKey, claims: Record<string, unknown>, header?: Record<string, unknown>) => {
    const token = await issuer.token(key, { preferred_username: 'oh-user', ...claims }, header);
    // A huge one would make the suite's secrets pattern too large: this describe's last test checks the log for it.
    if (token.length < 10_000) addSecret(token);
    tokens.push(token);
    return token;
  };
  const status = async (token: string, path = '/nodes/all') => {
    const r = await api.with({ token }).get(path);
    return r;
  };

  before(async () => {
    issuer = await startIssuer();
    rsa = await issuer.newKey('RS256');
    ec = await issuer.newKey('ES256');
    // Several keys of each kind: a token's key is the one its kid names.
    issuer.published.push(await issuer.newKey('RS256'), rsa, ec, await issuer.newKey('ES256'));
    ts = await startTestServer({ oidcIssuer: issuer.url, oidcAudience: 'hilt', oidcCaFile: issuer.caFile },
      { logger: loggerOptions('debug', { write: (l: string) => void lines.push(l) }) });
    api = ts.api;
    await must(api.put('/project/oh-p'));
  });
  after(async () => {
    await stopTestServer(ts);
    await issuer.close();
  });

  it('refuses algorithm confusion and every algorithm but RS256 and ES256, with the body of any bad token', async () => {
    const claims = { groups: ['hilt-admins'] };
    const good = await sign(rsa, claims);
    const [, payload] = good.split('.');
    const rsaPublic = createPublicKey(rsa.privateKey as KeyObject);
    const pem = rsaPublic.export({ type: 'spki', format: 'pem' }) as string;
    const hs = (secret: Uint8Array, alg = 'HS256') => new SignJWT({ iss: issuer.url, aud: 'hilt', exp: now() + 300, preferred_username: 'oh-user', ...claims })
      .setProtectedHeader({ alg, kid: rsa.kid, typ: 'JWT' }).sign(secret);
    const rs512 = new SignJWT({ iss: issuer.url, aud: 'hilt', exp: now() + 300, preferred_username: 'oh-user', ...claims });
    const intruder = await issuer.newKey('ES256');
    const cases: Record<string, string> = {
      'alg none, no signature': `${b64({ alg: 'none', typ: 'JWT' })}.${payload}.`,
      'alg none with the kid of a published key': `${b64({ alg: 'none', kid: rsa.kid })}.${payload}.`,
      'HS256 keyed by the public key (PEM)': await hs(new TextEncoder().encode(pem)),
      'HS256 keyed by the public key (JWK)': await hs(new TextEncoder().encode(JSON.stringify(rsa.jwk))),
      'HS512 keyed by the public key (PEM)': await hs(new TextEncoder().encode(pem), 'HS512'),
      'RS512 by the published key': await rs512.setProtectedHeader({ alg: 'RS512', kid: rsa.kid }).sign(rsa.privateKey),
      'PS256 by the published key': await new SignJWT({ iss: issuer.url, aud: 'hilt', exp: now() + 300, preferred_username: 'oh-user', ...claims })
        .setProtectedHeader({ alg: 'PS256', kid: rsa.kid }).sign(rsa.privateKey),
      'RS256 naming the kid of an EC key': await new SignJWT({ iss: issuer.url, aud: 'hilt', exp: now() + 300, preferred_username: 'oh-user', ...claims })
        .setProtectedHeader({ alg: 'RS256', kid: ec.kid }).sign(rsa.privateKey),
      'a key of its own in the header (jwk), an unknown kid': await sign(intruder, claims, { jwk: intruder.jwk }),
      'a key of its own in the header (jwk), a published kid': await sign({ ...intruder, kid: ec.kid }, claims, { jwk: intruder.jwk }),
      'no kid, a key the issuer does not publish': await sign({ ...intruder, kid: undefined as unknown as string }, claims),
      'jku naming another key set': await sign(intruder, claims, { jku: `${issuer.url}/elsewhere` }),
      // Several published keys of its kind could have signed it: none is tried.
      'no kid, a published key': await sign({ ...ec, kid: undefined as unknown as string }, claims),
    };
    for (const [what, token] of Object.entries(cases)) {
      addSecret(token);
      tokens.push(token);
      const r = await status(token);
      expect(r.status, what).to.equal(401);
      expect(r.body, what).to.deep.equal(BAD);
    }
    expect((await status(await sign(ec, claims))).status, 'the same, with its kid').to.equal(200);
  });

  it('checks iss and aud exactly (aud a string or a list), exp and nbf with 60 s of leeway, and the claims\' types', async () => {
    const ok: Record<string, Record<string, unknown>> = {
      'aud a list naming hilt': { aud: ['another', 'hilt'] },
      'exp 50 s ago': { exp: now() - 50 },
      'nbf in 50 s': { nbf: now() + 50 },
      'groups holding numbers and objects beside names': { groups: [1, { a: 1 }, null, 'hilt-project-oh-p'] },
    };
    for (const [what, claims] of Object.entries(ok)) expect((await status(await sign(rsa, claims))).status, what).to.equal(200);
    const bad: Record<string, Record<string, unknown>> = {
      'aud a list without hilt': { aud: ['another', 'hilt2'] },
      'aud empty list': { aud: [] },
      'aud another case': { aud: 'HILT' },
      'aud a number': { aud: 1 },
      'aud missing': { aud: undefined },
      'iss with a slash more': { iss: `${issuer.url}/` },
      'iss missing': { iss: undefined },
      'exp 70 s ago': { exp: now() - 70 },
      'exp a string': { exp: String(now() + 300) },
      'nbf in 70 s': { nbf: now() + 70 },
      'nbf a string': { nbf: String(now()) },
      'iat a string': { iat: 'now' },
      'no user claim': { preferred_username: undefined },
      'a user claim that is a number': { preferred_username: 12345 },
      'a user claim that is a list': { preferred_username: ['oh-user'] },
      'an empty user claim': { preferred_username: '' },
      'a user claim of 256 bytes': { preferred_username: 'u'.repeat(256) },
      ...Object.fromEntries(['hilt', 'switch', 'recovery', 'monitor', 'bootstrap', 'upgrade'].map((n) => [`the user claim ${n}, the service's own`, { preferred_username: n, groups: ['hilt-admins'] }])),
    };
    for (const [what, claims] of Object.entries(bad)) {
      const r = await status(await sign(rsa, { groups: ['hilt-admins'], ...claims }));
      expect(r.status, what).to.equal(401);
      expect(r.body, what).to.deep.equal(BAD);
    }
    // The groups claim as a string, a number or an object gives no rights at all.
    for (const groups of ['hilt-admins', 7, { 'hilt-admins': true }]) {
      const token = await sign(rsa, { groups });
      expect((await status(token)).status, JSON.stringify(groups)).to.equal(200);
      expect((await status(token, '/projects')).status, JSON.stringify(groups)).to.equal(401);
    }
  });

  it('a huge token is a 4xx, never a 5xx or a hang: in a header, and at the dashboard\'s login', async () => {
    // Sent by hand: the test client would register it as a secret, and the suite's pattern of them would be too large.
    const raw = async (path: string, init: RequestInit) => {
      const t0 = Date.now();
      const r = await fetch(`${ts.url}${path}`, init);
      const text = await r.text();
      expect(Date.now() - t0, path).to.be.below(5_000);
      return { status: r.status, text };
    };
    const login = (token: string) => raw('/ui/api/login', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token }) });
    const groups = Array.from({ length: 3000 }, (_, i) => `hilt-project-g${i}`);
    const big = await sign(rsa, { groups: [...groups, 'hilt-admins'], filler: 'f'.repeat(20_000) });
    const r = await raw('/nodes/all', { headers: { authorization: `Bearer ${big}` } }).catch((e: Error) => ({ status: 0, text: e.message }));
    expect(r.status, r.text).to.be.within(400, 499);
    // The dashboard takes it in a body: a signed one opens a session, a garbage one is refused.
    expect((await login(big)).status).to.equal(200);
    const garbage = `${b64({ alg: 'RS256', kid: rsa.kid })}.${b64({ preferred_username: 'x'.repeat(300_000), groups })}.${'A'.repeat(100_000)}`;
    tokens.push(garbage);
    const refused = await login(garbage);
    expect(refused.status).to.equal(401);
    expect(JSON.parse(refused.text)).to.deep.equal(BAD);
  });

  it('never logs a token, nor its payload or signature', async () => {
    // Every token this describe sent, good or bad, and a login that was refused.
    await api.call('POST', '/ui/api/login', { as: null, body: { token: tokens[0] } });
    const parts = tokens.flatMap((t) => t.split('.').slice(1)).filter((p) => p.length > 16);
    const log = lines.join('');
    expect(lines.length).to.be.above(10);
    for (const p of parts) expect(log.includes(p), 'a token in the log').to.equal(false);
  });
});

describe('OpenID Connect: the issuer\'s keys down, slow or garbage, and a flood of unknown key ids, against a running server', function () {
  this.timeout(120_000);
  const BAD = { type: 'AuthorizationError', msg: 'invalid or expired token' };

  /** A server whose issuer's JWK set answers as `answer` says (it has fetched no keys yet), and a good token of that issuer. */
  async function setUp(answer?: (res: ServerResponse) => void) {
    const issuer = await startIssuer();
    const key = await issuer.newKey('ES256');
    issuer.published.push(key);
    issuer.jwksAnswer = answer;
    // Few failures lock a name: an issuer down must not lock its users out.
    const ts = await startTestServer({ oidcIssuer: issuer.url, oidcAudience: 'hilt', oidcCaFile: issuer.caFile, loginMaxFailures: 2 });
    const token = await issuer.token(key, { preferred_username: 'ok-user', groups: ['hilt-admins'] });
    addSecret(token);
    return { issuer, key, ts, token, done: async () => { await stopTestServer(ts); await issuer.close(); } };
  }

  const timed = async (api: Client) => {
    const t0 = Date.now();
    const r = await api.get('/projects');
    return { ...r, ms: Date.now() - t0 };
  };

  const cases: [string, (res: ServerResponse) => void][] = [
    ['answers 500', (res) => res.writeHead(500).end('down')],
    ['answers what is not JSON', (res) => res.writeHead(200, { 'content-type': 'application/json' }).end('<html>oops</html>')],
    ['answers JSON that is no key set', (res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"keys": "none"}')],
    ['answers a redirect', (res) => res.writeHead(302, { location: 'https://127.0.0.1:1/jwks' }).end()],
    ['never answers', () => undefined],
    ['drips its answer, a byte every second', (res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const t = setInterval(() => res.write(' '), 1_000);
      res.on('close', () => clearInterval(t));
    }],
  ];
  for (const [what, answer] of cases) {
    it(`an issuer whose key set ${what}: 503 at once (within 10 s), no lock of the user; its keys are used once it answers`, async () => {
      const s = await setUp(answer);
      try {
        const api = s.ts.api.with({ token: s.token });
        for (let i = 0; i < 3; i++) {
          const r = await timed(api);
          expect(r.status, `${what}: try ${i}: ${r.text}`).to.equal(503);
          expect(r.body.type).to.equal('ServiceUnavailableError');
          expect(r.ms, `${what}: try ${i}`).to.be.below(10_000);
        }
        // A token that is no JWT at all is a bad token whatever the issuer does.
        const junk = await s.ts.api.with({ token: 'not-a-jwt-at-all' }).get('/projects');
        expect(junk.body).to.deep.equal(BAD);
        s.issuer.jwksAnswer = undefined;
        await until('the issuer\'s keys are fetched again', async () => (await api.get('/projects')).status === 200, 30_000, 1_000);
      } finally {
        await s.done();
      }
    });
  }

  it('an issuer whose key set is endless: the fetch stops within a bound of bytes', async () => {
    let sent = 0;
    const chunk = Buffer.alloc(64 * 1024, ' ');
    const s = await setUp((res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"keys": [');
      const more = () => {
        while (sent < 256 * 1024 * 1024 && !res.destroyed) {
          sent += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', more);
        }
        res.end(']}');
      };
      more();
    });
    try {
      const r = await timed(s.ts.api.with({ token: s.token }));
      expect(r.status, r.text).to.equal(503);
      expect(sent, 'bytes the issuer could send').to.be.below(16 * 1024 * 1024);
    } finally {
      await s.done();
    }
  });

  it('a flood of tokens naming unknown key ids: one fetch of the keys a minute at most, every token refused as a bad one', async () => {
    const s = await setUp();
    try {
      expect((await s.ts.api.with({ token: s.token }).get('/projects')).status).to.equal(200);
      expect(s.issuer.jwksFetches).to.equal(1);
      const made = await s.issuer.newKey('ES256');
      const flood = await Promise.all(Array.from({ length: 20 }, (_, i) => s.issuer.token({ ...made, kid: `made-up-${i}` }, { preferred_username: `flood-${i}` })));
      const answers = await Promise.all(flood.map((token) => s.ts.api.with({ token }).get('/projects')));
      for (const r of answers) expect(r.body).to.deep.equal(BAD);
      expect(s.issuer.jwksFetches).to.equal(1);
    } finally {
      await s.done();
    }
  });
});

describe('OpenID Connect: what a token opened ends at its exp (with the leeway)', function () {
  this.timeout(60_000);
  let ts: TestServer;
  let issuer: TestIssuer;
  let rsa: SigningKey;

  before(async () => {
    issuer = await startIssuer();
    rsa = await issuer.newKey('RS256');
    issuer.published.push(rsa);
    ts = await startTestServer({ oidcIssuer: issuer.url, oidcAudience: 'hilt', oidcCaFile: issuer.caFile });
    await must(ts.api.put('/project/ox-p'));
    await must(ts.api.put('/node/ox-n1', { obm: obm('bmc-ox-n1') }));
    await must(ts.api.post('/project/ox-p/connect_node', { node: 'ox-n1' }));
    await must(ts.api.put('/node/ox-n1/console'));
  });
  after(async () => {
    await stopTestServer(ts);
    await issuer.close();
  });

  it('the event stream, the live console and the dashboard\'s session and stream of a member end within a second of exp + 60 s', async () => {
    // exp 56 s ago: 4 s left of the leeway.
    const token = await issuer.token(rsa, { preferred_username: 'ox-member', groups: ['hilt-project-ox-p'], exp: Math.floor(Date.now() / 1000) - 56 });
    addSecret(token);
    const endsAt = (Math.floor(Date.now() / 1000) - 56 + 60) * 1000;
    const login = await must(api().call('POST', '/ui/api/login', { as: null, body: { token } }));
    const cookie = String([login.headers['set-cookie']].flat()[0]).split(';')[0];
    const events = new SseStream(`${ts.url}/events`, { headers: { authorization: `Bearer ${token}` } });
    const uiEvents = new SseStream(`${ts.url}/ui/api/events`, { headers: { cookie } });
    const consoleApi = await watch(ts.url, 'ox-n1', null, { authorization: `Bearer ${token}` });
    const consoleUi = await watch(ts.url, 'ox-n1', null, { cookie, origin: ts.url }, '/ui/api');
    await until('both streams answer', () => events.status === 200 && uiEvents.status === 200);
    const closedAt = async (w: Watcher) => {
      await w.closed;
      return Date.now();
    };
    const ended = await Promise.all([events.ended.then(() => events.endedAt), uiEvents.ended.then(() => uiEvents.endedAt), closedAt(consoleApi), closedAt(consoleUi)]);
    for (const [i, at] of ended.entries()) expect(at - endsAt, `stream ${i}`).to.be.within(-100, 1_500);
    expect((await api().with({ token }).get('/project/ox-p/nodes')).status).to.equal(401);
    expect((await api().call('GET', '/ui/api/me', { as: null, headers: { cookie } })).status).to.equal(401);
  });

  const api = () => ts.api;
});

describe('OpenID Connect: an event stream follows its token\'s groups, not a database user of its name', function () {
  this.timeout(60_000);
  let ts: TestServer;
  let issuer: TestIssuer;
  let rsa: SigningKey;
  const streams: SseStream[] = [];

  before(async () => {
    issuer = await startIssuer();
    rsa = await issuer.newKey('RS256');
    issuer.published.push(rsa);
    ts = await startTestServer({ oidcIssuer: issuer.url, oidcAudience: 'hilt', oidcCaFile: issuer.caFile });
    await must(ts.api.put('/project/os-p'));
    for (const n of ['os-n1', 'os-n2']) await makeNode(ts.api, n);
    await must(ts.api.post('/project/os-p/connect_node', { node: 'os-n1' }));
  });
  after(async () => {
    for (const s of streams) s.close();
    await stopTestServer(ts);
    await issuer.close();
  });

  const bearer = async (user: string, groups: string[]) => {
    const token = await issuer.token(rsa, { preferred_username: user, groups });
    addSecret(token);
    return { authorization: `Bearer ${token}` };
  };
  /** A stream, once live (what follows is live). */
  const open = async (opts: ConstructorParameters<typeof SseStream>[1]) => {
    const s = new SseStream(`${ts.url}/events`, opts);
    streams.push(s);
    await s.until(() => s.comments.includes('live') || s.endedAt !== 0);
    expect(s.status, s.body).to.equal(200);
    return s;
  };
  /** An event of project os-p, and the stream showing it (so that what came before it was offered). */
  let mark = 0;
  const poke = async (s: SseStream) => {
    const value = ++mark;
    await must(ts.api.put('/node/os-n1/metadata/mark', { value }));
    await s.until(() => s.events.some((e) => e.data.name === 'os-n1' && JSON.stringify(e.data).includes(`"value":${value}`)) || s.endedAt !== 0);
  };

  it('a change of the database user of the same name (removed from a project, deleted) leaves the OpenID Connect caller\'s stream open', async () => {
    await must(ts.api.put('/auth/basic/user/os-same', { password: 'os-same-pw-1', 'is-admin': false }));
    await must(ts.api.post('/auth/basic/user/os-same/add_project', { project: 'os-p' }));
    const db = await open({ as: { user: 'os-same', password: 'os-same-pw-1' } });
    const oidc = await open({ headers: await bearer('os-same', ['hilt-project-os-p']) });
    await must(ts.api.post('/auth/basic/user/os-same/remove_project', { project: 'os-p' }));
    await db.until(() => db.endedAt !== 0, 10_000, 'the end');
    expect(db.comments.join(' ')).to.match(/access changed/);
    await must(ts.api.del('/auth/basic/user/os-same'));
    await poke(oidc);
    expect(oidc.endedAt, oidc.comments.join(' ')).to.equal(0);
    expect(oidc.events.filter((e) => e.data.name === 'os-n1').length).to.equal(1);
  });

  it('a project its groups name, created after the stream opened, ends the stream; the reconnect shows it from its creation on (and nothing of other projects)', async () => {
    const headers = await bearer('os-later', ['hilt-project-os-new']);
    const s = await open({ headers });
    // A stream whose groups do not name the new project is not disturbed.
    const other = await open({ headers: await bearer('os-other', ['hilt-project-os-p']) });
    await must(ts.api.put('/project/os-new'));
    await must(ts.api.post('/project/os-new/connect_node', { node: 'os-n2' }));
    await s.until(() => s.endedAt !== 0, 10_000, 'the end');
    expect(s.comments.join(' ')).to.match(/access changed/);
    const again = await open({ headers, lastEventId: s.lastId });
    await again.until(() => again.events.some((e) => e.data.name === 'os-n2'));
    expect(again.events.some((e) => e.event === 'project.created' && e.data.name === 'os-new'), 'its creation').to.equal(true);
    await poke(other);
    expect(other.endedAt, 'the other stream stays open').to.equal(0);
    await must(ts.api.put('/node/os-n2/metadata/seen', { value: 1 }));
    await again.until(() => again.events.some((e) => e.data.name === 'os-n2' && JSON.stringify(e.data).includes('seen')));
    expect(again.events.filter((e) => e.data.name === 'os-n1'), 'nothing of os-p').to.deep.equal([]);
    // Deleted: the stream ends again, and what comes later of another os-new is the groups' again.
    await must(ts.api.post('/project/os-new/detach_node', { node: 'os-n2' }));
    await must(ts.api.del('/project/os-new'));
    await again.until(() => again.endedAt !== 0, 10_000, 'the end');
    expect(again.comments.join(' ')).to.match(/access changed/);
  });
});
