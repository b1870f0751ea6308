#!/usr/bin/env node
/**
 * The hilt process: configuration from the environment, pino JSON logs, graceful SIGTERM.
 * `npm start` runs this file; `hilt serve` (src/cli) calls serve().
 */
import { loadConfig, plainHttpWarning } from './config';
import { startService } from './service';
import { loggerOptions, REDACTED, SECRET_KEY } from './redact';

/** The database URL without its password, for the log: libpq's URLs may carry it as a parameter too (`?password=`). */
function safeUrl(url: string | undefined): string | undefined {
  if (!url) return undefined;
  try {
    const u = new URL(url);
    if (u.password) u.password = REDACTED;
    for (const k of [...u.searchParams.keys()]) if (SECRET_KEY.test(k)) u.searchParams.set(k, REDACTED);
    return u.toString().replaceAll(encodeURIComponent(REDACTED), REDACTED);
  } catch {
    return 'unparseable';
  }
}

/**
 * Was the process given a young generation of its own size (`npm start` and deploy/hilt.service
 * give 32 MiB semi-spaces)? V8 reads the flag only as the process starts: `hilt serve` cannot set
 * it for itself, so it says how when it is missing.
 */
export function youngGenerationNotice(execArgv: readonly string[], nodeOptions = ''): string | undefined {
  if ([...execArgv, ...nodeOptions.split(/\s+/)].some((a) => a.startsWith('--max-semi-space-size'))) return undefined;
  return 'started without --max-semi-space-size: V8 keeps its default young generation and collects it more often under load; '
    + 'start with NODE_OPTIONS=--max-semi-space-size=32 (npm start and deploy/hilt.service give it)';
}

/** Starts the service and keeps it until SIGTERM or SIGINT, which close it and end the process. */
/**
 * The exit code of a start refused for its settings (sysexits' EX_CONFIG): deploy/hilt.service
 * does not restart on it (RestartPreventExitStatus), as starting again cannot help.
 */
export const EXIT_SETTINGS = 78;

class SettingsError extends Error {}

export async function serve(): Promise<void> {
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig();
  } catch (err) {
    throw new SettingsError((err as Error).message);
  }
  // On PostgreSQL a process may wait as a standby: it listens (503, /health) before it is active.
  // Printed once, on the terminal only: it is not a log line and is never stored in clear. It is
  // printed as soon as the admin exists: a start that fails after that (its port taken) would
  // otherwise leave a store whose only admin has a password nobody was ever shown.
  const showPassword = (password: string) => process.stdout.write(
    `\nhilt: created the bootstrap admin "${config.adminUser}" with password: ${password}\n` +
      'hilt: this password is shown only now; set HILT_ADMIN_PASSWORD before the first start to choose it.\n\n',
  );
  const svc = await startService(config, { logger: loggerOptions(config.logLevel), waitForActive: false, onAdminCreated: showPassword });
  const logger = svc.log;
  // It listens from here on, a standby too: the warning is due now, not once it is active.
  const warning = plainHttpWarning(config);
  if (warning) logger.warn({ host: config.host }, warning);
  const notice = youngGenerationNotice(process.execArgv, process.env.NODE_OPTIONS);
  if (notice) logger.info(notice);
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    svc.close().then(
      () => process.exit(0),
      (err) => {
        logger.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  if (svc.role !== 'active') logger.info({ url: svc.url, instance: svc.instance, database: safeUrl(config.databaseUrl), tls: !!config.tlsCert }, 'hilt is a standby');
  await svc.whenActive();
  if (stopping) return;
  logger.info({ url: svc.url, instance: svc.instance, storage: config.storage, dataDir: config.dataDir, database: safeUrl(config.databaseUrl), vlanPool: config.vlanPool, tls: !!config.tlsCert }, 'hilt is ready');
}

/** serve(), ending the process with 1 (EXIT_SETTINGS for its settings) and the reason when the service cannot start. */
export function runServe(): Promise<void> {
  return serve().catch((err) => {
    process.stderr.write(`hilt: failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(err instanceof SettingsError ? EXIT_SETTINGS : 1);
  });
}

if (require.main === module) void runServe();
