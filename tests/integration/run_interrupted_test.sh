#!/usr/bin/env bash
# A run left `running` by a process that died (kill -9) is marked interrupted by the next tune that
# opens the database; a run whose process is alive (here: stopped with SIGSTOP, silent) is not. Each
# running tune holds a lock file <db>.run-<id>.lock (tuner/run_lock.h), removed when the run ends.
. "$(dirname "$0")/lib.sh"
mkdir -p recipes && ln -s "$SRC/templates" templates && touch .tune-root
sed 's/    grid = function(c, p, d)/    grid = function(c, p, d)\n      local x = 0; for i = 1, 300000 do x = x + i end/' \
  "$SRC/recipes/copy.lua" > recipes/copy.lua
REPLAY="replay:$SRC/data/recorded/copy.db"
slow_run() { exec "$TUNE" run recipes/copy.lua --device "$REPLAY" --db r.db --strategy exhaustive --no-warm-start --quiet "$@"; }
quick_run() { "$TUNE" run recipes/copy.lua --device "$REPLAY" --db r.db --problem 64MiB --budget 1 --no-warm-start; }
status() { sql r.db "SELECT status FROM runs WHERE id = $1"; }

# 1. killed mid-run: its row stays running, its lock file stays, unheld
slow_run >a.txt 2>&1 &
a=$!
sleep 1
kill -9 $a; wait $a 2>/dev/null
check "the killed run is left running" test "$(status 1)" = running
check "its lock file is there" test -f r.db.run-1.lock
sleep 2.2 # past the moment a new run may still be between its row and its lock
quick_run >b.txt 2>&1
check "the next run succeeds ($?)" test $? -eq 0
check "it says what it marked" contains b.txt "r.db: 1 run left running by a process that is gone: marked interrupted"
check "the killed run is now interrupted" test "$(status 1)" = interrupted
check "it ended at its last result or start" test -n "$(sql r.db "SELECT ended_at FROM runs WHERE id = 1")"
check "the next run is done" test "$(status 2)" = done
check "no lock file is left" test -z "$(ls r.db.run-*.lock 2>/dev/null)"

# 2. alive but silent (SIGSTOP): not marked; finishes as done once continued.
# A process stopped inside a write transaction blocks every writer of the file (SQLite's one-writer
# rule; the others give up after the busy timeout), so it is stopped at a moment it holds no write lock.
write_lock_free() { python3 -c 'import sqlite3,sys
c=sqlite3.connect(sys.argv[1],timeout=0,isolation_level=None)
try: c.execute("BEGIN IMMEDIATE"); c.execute("ROLLBACK")
except sqlite3.OperationalError: sys.exit(1)' r.db; }
stop_outside_writes() { # stop_outside_writes PID: SIGSTOP PID while it holds no write lock on r.db
  for _ in $(seq 100); do
    kill -STOP "$1"
    write_lock_free && return 0
    kill -CONT "$1"; sleep 0.05
  done
  return 1
}
slow_run >c.txt 2>&1 &
c=$!
sleep 1
check "the slow run is stopped outside a write" stop_outside_writes $c
sleep 2.5
quick_run >d.txt 2>&1
rc=$?
check "a run beside a stopped one succeeds ($rc)" test $rc -eq 0
[ $rc -eq 0 ] || sed 's/^/    /' d.txt | tail -15 >&2
check "the stopped run is still running" test "$(status 3)" = running
check "nothing was marked" lacks d.txt "marked interrupted"
kill -CONT $c
wait $c
check "the continued run ends done" test "$(status 3)" = done

# 2b. a writer that holds the lock past the busy timeout: the run fails and says why
python3 -c 'import sqlite3,sys,time
c=sqlite3.connect(sys.argv[1],isolation_level=None); c.execute("BEGIN IMMEDIATE"); print(flush=True); time.sleep(8)' r.db \
  > hold.txt &
h=$!
for _ in $(seq 100); do [ -s hold.txt ] && break; sleep 0.05; done
quick_run >e.txt 2>&1
check "a run behind a held write lock fails" test $? -ne 0
check "it names the lock holder" contains e.txt "database is locked; another process has held the write lock for over 5 s"
kill $h 2>/dev/null; wait $h 2>/dev/null

# 3. a row of a tune without locks: marked once silent for the grace period, not before
sql_rw() { python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute(sys.argv[2]); c.commit()' r.db "$1"; }
sql_rw "INSERT INTO runs (recipe_id, device_id, status, started_at) SELECT recipe_id, device_id, 'running', '2020-01-01T00:00:00.000Z' FROM runs WHERE id = 1"
sql_rw "INSERT INTO runs (recipe_id, device_id, status) SELECT recipe_id, device_id, 'running' FROM runs WHERE id = 1"
quick_run >e.txt 2>&1
check "an old lockless running row is marked" test "$(sql r.db "SELECT status FROM runs WHERE started_at LIKE '2020%'")" = interrupted
check "a fresh lockless running row is not" test "$(sql r.db "SELECT count(*) FROM runs WHERE status = 'running'")" = 1
finish
