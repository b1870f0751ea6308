import { params, body, name, noBody, noQuery, responses, done, names, lookupName } from './common';

export const projectParams = params('project');

export const createProject = { params: projectParams, body: noBody, querystring: noQuery, response: responses('change', { 200: done }, 409) } as const;
export const deleteProject = createProject;
export const listProjects = { querystring: noQuery, response: responses('read', { 200: names('Every project') }) } as const;
export const projectNode = { params: projectParams, body: body(['node'], { node: lookupName }), querystring: noQuery, response: responses('change', { 200: done }, 404, 409) } as const;
export const projectList = { params: projectParams, querystring: noQuery, response: responses('read', { 200: names('The project\'s nodes, networks or headnodes') }, 404) } as const;
export { name };
