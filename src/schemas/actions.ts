import { params, body, noQuery, str } from './common';

export const connectNetwork = {
  params: params('node', 'nic'),
  body: body(['network'], { network: str, channel: str }),
  querystring: noQuery,
} as const;
export const detachNetwork = { params: params('node', 'nic'), body: body(['network'], { network: str }), querystring: noQuery } as const;
export const showAction = { params: params('status_id'), querystring: noQuery } as const;
export const listActions = { params: params('node'), querystring: noQuery } as const;
