#!/usr/bin/env bash
# The whole suite (`npm test`, after the build): the LMDB run and the PostgreSQL run side by
# side. Most of each run waits (simulators, switch and BMC timeouts, child processes starting),
# so the two together take far less than one after the other on a 2-core machine. Each run's
# daemons are its own children in folders of their own (PostgreSQL listens on a socket in its
# folder only), so the runs cannot collide. The LMDB run prints as it goes; the PostgreSQL run's
# report follows it. Fails if either run fails.
set -u
cd "$(dirname "$0")/.."
pg_log=$(mktemp -t hilt-test-postgres.XXXXXX)
npm run --silent test:postgres >"$pg_log" 2>&1 &
pg=$!
npx mocha
lmdb_rc=$?
wait "$pg"
pg_rc=$?
echo
echo "=== the PostgreSQL run (HILT_STORAGE=postgres) ==="
cat "$pg_log"
rm -f "$pg_log"
echo "LMDB run: exit $lmdb_rc; PostgreSQL run: exit $pg_rc"
[ "$lmdb_rc" -eq 0 ] && [ "$pg_rc" -eq 0 ]
