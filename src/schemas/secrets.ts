import { body, noQuery, responses } from './common';

export const rotateKey = {
  body: body(['key_file'], { key_file: { type: 'string', minLength: 1, maxLength: 4096, description: 'path, on the service\'s machine, of the new key (32 random bytes, base64 or hex)' } }),
  querystring: noQuery,
  response: responses('change', {
    200: {
      type: 'object',
      description: 'Every credential is under the new key, installed as HILT_SECRET_KEY_FILE when it could be written (installed)',
      required: ['previous_key_id', 'key_id', 'rewritten', 'key_file', 'installed'],
      properties: {
        previous_key_id: { type: 'string' }, key_id: { type: 'string' }, rewritten: { type: 'integer', description: 'stored events and snapshots re-encrypted' },
        key_file: { type: 'string' }, installed: { type: 'boolean' },
      },
    },
  }, 409),
} as const;
