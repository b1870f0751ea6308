/** What every command needs: the client, built from the global options and the environment. */
import { Command } from 'commander';
import { Client, DEFAULT_TIMEOUT_S, UsageError } from './client';
import { credentialsFor, Identity } from './credentials';

/** hilt's own default listen address (docs/operations.md, Settings): HIL's CLI had none. */
export const DEFAULT_ENDPOINT = 'http://127.0.0.1:5000';

export interface Ctx {
  client(): Client;
}

export function context(program: Command, env: NodeJS.ProcessEnv = process.env): Ctx {
  let client: Client | undefined;
  return {
    client() {
      if (client) return client;
      const o = program.opts<{ endpoint?: string; user?: string; timeout?: string }>();
      const endpoint = o.endpoint ?? env.HIL_ENDPOINT ?? DEFAULT_ENDPOINT;
      // --user names who calls; else a token ($HILT_TOKEN, $HIL_TOKEN), else $HIL_USERNAME.
      const token = o.user ? undefined : env.HILT_TOKEN || env.HIL_TOKEN || undefined;
      const id: Identity = { user: o.user ?? env.HIL_USERNAME, password: env.HIL_PASSWORD, token };
      const made: Client = new Client(endpoint, credentialsFor(id, () => made.endpoint), timeoutOf(o.timeout ?? env.HILT_TIMEOUT));
      // Else the endpoint's own user and password (http://user:pw@host), which HIL's CLI sent
      // through python-requests.
      if (!id.user && !id.token && made.userInfo) Object.assign(id, made.userInfo);
      return (client = made);
    },
  };
}

/** --timeout or HILT_TIMEOUT: seconds (0: no limit); unset or empty: the default. */
function timeoutOf(v: string | undefined): number {
  if (v === undefined || v === '') return DEFAULT_TIMEOUT_S;
  if (!/^\d{1,7}(\.\d{1,3})?$/.test(v)) throw new UsageError(`the timeout must be a number of seconds (0: no limit), got "${v}"`);
  return Number(v);
}

/** --json on a read; --jsonout too where HIL's CLI spelled it so. */
export interface JsonOpts { json?: boolean; jsonout?: boolean }
export const wantsJson = (o: JsonOpts): boolean => !!(o.json || o.jsonout);
