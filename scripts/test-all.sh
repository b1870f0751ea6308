#!/usr/bin/env bash
# The whole suite (`npm test`, after the build), as two lines of work side by side:
#   - in the foreground, the LMDB run of every test but the benches' smoke runs, the browser's and
#     the randomized model and fuzz tests;
#   - in the background, the PostgreSQL run, then those (on LMDB).
# Most of each run waits (simulators, switch and BMC timeouts, child processes starting), so two
# lines together take far less than one after the other on a 2-core machine; the benches and the
# browser tests go to the second line because the PostgreSQL run alone ends well before the LMDB
# run (about 9 against 23 minutes), which kept the whole suite as long as the LMDB run. Each run's
# daemons are its own children in folders of their own (PostgreSQL listens on a socket in its
# folder only), so the runs cannot collide. The foreground prints as it goes; the background's
# report follows it. Fails if any run fails, and then ends with each failing run's failures again
# (titles and messages, without stack traces), since a CI log is often read from its end.
set -u
cd "$(dirname "$0")/.."
log=$(mktemp -t hilt-test-second.XXXXXX)
first_log=$(mktemp -t hilt-test-first.XXXXXX)
(
  npm run --silent test:postgres
  pg_rc=$?
  echo
  echo "=== the benches' smoke runs, the browser tests and the randomized tests (LMDB) ==="
  npm run --silent test:lmdb-tail
  tail_rc=$?
  echo "PostgreSQL run: exit $pg_rc; benches and browser tests: exit $tail_rc"
  [ "$pg_rc" -eq 0 ] && [ "$tail_rc" -eq 0 ]
) >"$log" 2>&1 &
second=$!
npx mocha --ignore 'dist/test/bench/**' --ignore 'dist/test/ui/**' --ignore 'dist/test/fuzz/**' 2>&1 | tee "$first_log"
lmdb_rc=${PIPESTATUS[0]}
wait "$second"
second_rc=$?
echo
echo "=== the PostgreSQL run (HILT_STORAGE=postgres), then the benches' smoke runs and the browser tests ==="
cat "$log"
# Mocha's "N failing" section of a run's output, each failure's title and message only.
failures() {
  awk '/^  [0-9]+ failing$/ { p = 1 } p && !/^ +at / && !/^ +[+-] / && !/^ *$/' "$1" | head -n 60
}
if [ "$lmdb_rc" -ne 0 ] || [ "$second_rc" -ne 0 ]; then
  echo
  echo "=== failures again ==="
  [ "$lmdb_rc" -ne 0 ] && { echo "LMDB run:"; failures "$first_log"; }
  [ "$second_rc" -ne 0 ] && { echo "PostgreSQL run, benches and browser tests:"; failures "$log"; }
fi
rm -f "$log" "$first_log"
echo "LMDB run: exit $lmdb_rc; PostgreSQL run, benches and browser tests: exit $second_rc"
[ "$lmdb_rc" -eq 0 ] && [ "$second_rc" -eq 0 ]
