#!/usr/bin/env node
/** The `hilt` command (package.json bin): parse, run, and end with the exit code of what happened (src/cli/output.ts). */
import { CommanderError } from 'commander';
import { buildProgram } from './program';
import { EXIT, report } from './output';

export async function run(argv: string[]): Promise<number> {
  const { program, ctx } = buildProgram();
  try {
    await program.parseAsync(argv);
    return EXIT.ok;
  } catch (err) {
    // --help and --version end without error; anything else commander refuses is a usage error.
    if (err instanceof CommanderError) return err.exitCode === 0 ? EXIT.ok : EXIT.usage;
    let endpoint: string | undefined;
    let lastJsonCall: string | undefined;
    try {
      ({ endpoint, lastJsonCall } = ctx.client());
    } catch {
      endpoint = undefined;
    }
    return report(err, endpoint, lastJsonCall);
  }
}

if (require.main === module) {
  // A reader that stopped reading (`hilt events --follow | head -1`) wants no more: end quietly,
  // as a Unix filter does, rather than with an unhandled EPIPE's stack.
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(EXIT.ok);
    throw err;
  });
  void run(process.argv).then((code) => {
    // Let stdout drain (a pipe) before ending: keep-alive sockets must not hold the process.
    process.stdout.write('', () => process.exit(code));
  });
}
