#!/usr/bin/env node
/**
 * The hilt process: configuration from the environment, pino JSON logs, graceful SIGTERM.
 * `npm start` runs this file; `hilt serve` (src/cli) calls serve().
 */
import { loadConfig, plainHttpWarning } from './config';
import { startService } from './service';
import { loggerOptions } from './redact';

/** The database URL without its password, for the log. */
function safeUrl(url: string | undefined): string | undefined {
  if (!url) return undefined;
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return 'unparseable';
  }
}

/** Starts the service and keeps it until SIGTERM or SIGINT, which close it and end the process. */
export async function serve(): Promise<void> {
  const config = loadConfig();
  // On PostgreSQL a process may wait as a standby: it listens (503, /health) before it is active.
  const svc = await startService(config, { logger: loggerOptions(config.logLevel), waitForActive: false });
  const logger = svc.log;
  // It listens from here on, a standby too: the warning is due now, not once it is active.
  const warning = plainHttpWarning(config);
  if (warning) logger.warn({ host: config.host }, warning);
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
  if (svc.generatedAdminPassword) {
    // Printed once, on the terminal only: it is not a log line and is never stored in clear.
    process.stdout.write(
      `\nhilt: created the bootstrap admin "${config.adminUser}" with password: ${svc.generatedAdminPassword}\n` +
        'hilt: this password is shown only now; set HILT_ADMIN_PASSWORD before the first start to choose it.\n\n',
    );
  }
  logger.info({ url: svc.url, instance: svc.instance, storage: config.storage, dataDir: config.dataDir, database: safeUrl(config.databaseUrl), vlanPool: config.vlanPool, tls: !!config.tlsCert }, 'hilt is ready');
}

/** serve(), ending the process with 1 and the reason when the service cannot start. */
export function runServe(): Promise<void> {
  return serve().catch((err) => {
    process.stderr.write(`hilt: failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}

if (require.main === module) void runServe();
