import { params, body, noBody, noQuery, str } from './common';

const headnode = params('headnode');
const hnic = params('headnode', 'hnic');

export const createHeadnode = { params: headnode, body: body(['project', 'base_img'], { project: str, base_img: str }), querystring: noQuery } as const;
export const headnodeCall = { params: headnode, body: noBody, querystring: noQuery } as const;
export const showHeadnode = { params: headnode, querystring: noQuery } as const;
export const hnicCall = { params: hnic, body: noBody, querystring: noQuery } as const;
export const connectHnic = { params: hnic, body: body(['network'], { network: str }), querystring: noQuery } as const;
export const listImages = { querystring: noQuery } as const;
