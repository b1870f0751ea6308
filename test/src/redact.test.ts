/**
 * redact (src/redact.ts): a copy with every secret's value replaced, the same as the plain
 * Object.entries → Object.fromEntries copy it replaced, for any JSON value.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { redact, redactedCopy, redactedUrl, REDACTED, SECRET_KEY } from '../../src/redact';

function reference(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(reference);
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, SECRET_KEY.test(k) ? REDACTED : reference(v)]));
  return value;
}

describe('redact', () => {
  it('replaces the values of secret keys at any depth, and copies the rest', () => {
    const input = { name: 'n1', obm: { type: 't', user: 'u', password: 'p', fields: [{ token: 't', x: 1 }] }, api_secret: { a: 1 } };
    expect(redact(input)).to.deep.equal({ name: 'n1', obm: { type: 't', user: 'u', password: REDACTED, fields: [{ token: REDACTED, x: 1 }] }, api_secret: REDACTED });
    expect(input.obm.password).to.equal('p');
  });

  it('keeps an own "__proto__" key a plain property, as the reference does', () => {
    const input = JSON.parse('{"__proto__": {"password": "p", "x": 1}, "y": 2}');
    const out = redact(input) as Record<string, unknown>;
    expect(Object.getPrototypeOf(out)).to.equal(Object.prototype);
    expect(JSON.stringify(out)).to.equal(JSON.stringify(reference(input)));
    expect(JSON.stringify(out)).to.equal('{"__proto__":{"password":"[redacted]","x":1},"y":2}');
  });

  it('gives what the entries → fromEntries copy gives, for any JSON value (property)', () => {
    const keys = fc.oneof(fc.constantFrom('password', 'secret', 'Token', 'passwordHash', 'user', 'host', '__proto__', 'type'), fc.string());
    const json = fc.letrec((tie) => ({
      value: fc.oneof({ depthSize: 'small' }, fc.jsonValue({ maxDepth: 1 }), fc.array(tie('value'), { maxLength: 4 }), fc.dictionary(keys, tie('value'), { maxKeys: 5 })),
    })).value;
    fc.assert(fc.property(json, (v) => {
      expect(JSON.stringify(redact(v))).to.equal(JSON.stringify(reference(v)));
    }), { numRuns: 500 });
  });

  it('leaves out the key it is told to omit, at the top only, and copies the rest as redact does (property)', () => {
    const keys = fc.oneof(fc.constantFrom('password', 'type', 'user', '__proto__'), fc.string());
    const json = fc.letrec((tie) => ({
      value: fc.oneof({ depthSize: 'small' }, fc.jsonValue({ maxDepth: 1 }), fc.array(tie('value'), { maxLength: 4 }), fc.dictionary(keys, tie('value'), { maxKeys: 5 })),
    })).value;
    fc.assert(fc.property(fc.dictionary(keys, json, { maxKeys: 6 }), (v) => {
      const { type: _omitted, ...rest } = v;
      expect(JSON.stringify(redactedCopy(v, 'type'))).to.equal(JSON.stringify(reference(rest)));
    }), { numRuns: 500 });
    expect(redactedCopy({ type: 'NodeRegistered', obm: { type: 'ipmi', password: 'p' } }, 'type')).to.deep.equal({ obm: { type: 'ipmi', password: REDACTED } });
  });

  it('takes the values of secret query parameters out of a logged URL, and keeps the rest', () => {
    expect(redactedUrl('/nodes/free')).to.equal('/nodes/free');
    expect(redactedUrl('/a?x=1&access_token=t&pass%77ord=p&y=&Secret+Key=s&token')).to.equal(`/a?x=1&access_token=${REDACTED}&pass%77ord=${REDACTED}&y=&Secret+Key=${REDACTED}&token`);
    expect(redactedUrl('/a?%E0%A4%A=1&tokens=2')).to.equal(`/a?%E0%A4%A=1&tokens=${REDACTED}`);
  });
});
