import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ERROR_STATUS } from '../../src/errors';

describe('error catalogue', () => {
  it('documents every error type with its status in docs/api.md, Errors', () => {
    const doc = readFileSync(join(__dirname, '..', '..', '..', 'docs', 'api.md'), 'utf8');
    for (const [type, status] of Object.entries(ERROR_STATUS)) {
      expect(doc, type).to.match(new RegExp('\\| `' + type + '` \\| ' + status + ' \\|'));
    }
  });
});
