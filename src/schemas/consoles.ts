import { params, noBody, noQuery, responses, done } from './common';

/** show_console (HIL v0.2): the recorded text itself, not JSON, as HIL's client reads it (`response.content`). */
export const showConsole = {
  params: params('node'),
  querystring: noQuery,
  response: responses('read', {
    200: {
      description: 'The most recent HILT_CONSOLE_LOG_BYTES of the node\'s recorded console output (text/plain; charset=utf-8)',
      content: { 'text/plain': { schema: { type: 'string' } } },
    },
  }, 404, 409, 503),
} as const;

/** start_console: recording starts (idempotent). */
export const startConsole = { params: params('node'), body: noBody, querystring: noQuery, response: responses('change', { 200: done }, 404, 409) } as const;

/** stop_console: recording stops and the log is deleted (idempotent). */
export const stopConsole = { params: params('node'), body: noBody, querystring: noQuery, response: responses('change', { 200: done }, 404, 409) } as const;

/** The live console: a WebSocket (the upgrade is answered 101; an error before it, as any call). */
export const streamConsole = {
  params: params('node'),
  querystring: noQuery,
  response: responses('change', {
    101: { description: 'Switching to the WebSocket protocol: binary messages of console output from the service, input from the client' },
  }, 404, 409),
} as const;
