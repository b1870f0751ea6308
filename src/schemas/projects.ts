import { params, body, name, noBody, noQuery } from './common';

export const projectParams = params('project');

export const createProject = { params: projectParams, body: noBody, querystring: noQuery } as const;
export const deleteProject = createProject;
export const listProjects = { querystring: noQuery } as const;
export const projectNode = { params: projectParams, body: body(['node'], { node: { type: 'string' } }), querystring: noQuery } as const;
export const projectList = { params: projectParams, querystring: noQuery } as const;
export { name };
