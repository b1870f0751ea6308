/**
 * The hilt command line: `hilt serve` starts the service; every other command is a client of
 * it, with the command tree of HIL's CLI (hil/cli/) so that an operator's `hil` scripts run
 * with `hilt` in its place. docs/cli.md lists the tree and where it differs.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Command, InvalidArgumentError } from 'commander';
import { context, DEFAULT_ENDPOINT, Ctx } from './context';
import { nodeCommands } from './commands/node';
import { projectCommands } from './commands/project';
import { networkCommands } from './commands/network';
import { switchCommands } from './commands/switch';
import { userCommands } from './commands/user';
import { headnodeCommands } from './commands/headnode';
import { actionCommands } from './commands/action';
import { adminCommands } from './commands/admin';
import { eventCommands, webhookCommands } from './commands/events';
import { lifecycleCommands } from './commands/lifecycle';
import { inventoryCommands } from './commands/inventory';
import { tokenCommands } from './commands/token';
import { bashCompletion } from './completion';
import { note, out } from './output';
import { DEFAULT_TIMEOUT_S } from './client';

function version(): string {
  try {
    return (JSON.parse(readFileSync(join(__dirname, '..', '..', '..', 'package.json'), 'utf8')) as { version: string }).version;
  } catch {
    return 'unknown';
  }
}

export function buildProgram(env: NodeJS.ProcessEnv = process.env): { program: Command; ctx: Ctx } {
  const program = new Command('hilt');
  // Set before the commands are added: subcommands inherit them.
  program
    .exitOverride()
    .showHelpAfterError('(add --help for usage)')
    .configureOutput({
      writeOut: (s) => process.stdout.write(s),
      writeErr: (s) => process.stderr.write(s),
      // An unknown option's value is not echoed: it may be a password (`--password=…`).
      // (to its last quote: a value may hold a newline or a quote)
      outputError: (s, write) => write(s.replace(/(unknown option '[^'=\n]*=)[\s\S]*'/, '$1…\'')),
    })
    .description('hilt: a bare-metal allocation service speaking HIL\'s REST API, and its command line (HIL\'s `hil` commands)')
    .version(version())
    .option('--endpoint <url>', `the service to call (default: $HIL_ENDPOINT, else ${DEFAULT_ENDPOINT})`)
    .option('--timeout <seconds>', `how long a call waits for the server before it fails with exit code 3 (default: $HILT_TIMEOUT, else ${DEFAULT_TIMEOUT_S}; 0: no limit); an open stream (events --follow, a console) is not cut`)
    .option('--user <name>', 'the user to call as (default: $HIL_USERNAME); the password is $HIL_PASSWORD, or asked for on a terminal. Without --user, a token in $HILT_TOKEN (or $HIL_TOKEN) is sent instead')
    .addHelpText('after', '\nExit codes: 0 success; 1 the server refused the call (4xx); 2 a usage error; 3 the server, its hardware or the\n'
      + 'connection failed (5xx, unreachable, no answer within the timeout, a network operation that ended in ERROR); 130 stopped by Ctrl-C (--wait, a prompt).');
  const ctx = context(program, env);

  program.command('serve').description('Start the service (configured by HILT_* variables: docs/operations.md, Settings)')
    .argument('[port]', 'the port to listen on, as HIL\'s `hil serve PORT` took it (instead of HILT_PORT)', (v) => {
      if (!/^\d{1,5}$/.test(v) || Number(v) > 65535) throw new InvalidArgumentError('a port number, 0 to 65535');
      return v;
    })
    .action(async (port: string | undefined) => {
      if (port !== undefined) process.env.HILT_PORT = port;
      const { runServe } = await import('../server');
      await runServe();
      // The service runs until a signal ends the process (src/server.ts).
      await new Promise<never>(() => undefined);
    });

  // HIL ran its network operations in a second daemon; a deployment that still starts it is told why it need not.
  program.command('serve_networks').description('HIL\'s networking daemon: nothing to run, `hilt serve` carries out network operations itself')
    .action(() => note('serve_networks has nothing to do: `hilt serve` carries out network operations itself'));

  nodeCommands(program, ctx);
  projectCommands(program, ctx);
  networkCommands(program, ctx);
  switchCommands(program, ctx);
  userCommands(program, ctx);
  headnodeCommands(program, ctx);
  actionCommands(program, ctx);
  adminCommands(program, ctx);
  eventCommands(program, ctx);
  webhookCommands(program.commands.find((x) => x.name() === 'admin')!, ctx);
  lifecycleCommands(program, ctx);
  inventoryCommands(program, ctx);
  tokenCommands(program, ctx);

  const completion = program.command('completion').description('Print a shell completion script');
  completion.command('bash').description('bash: `source <(hilt completion bash)`').action(() => out(bashCompletion(program)));
  return { program, ctx };
}

