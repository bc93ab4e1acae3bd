# lib.sh: tiny assertion helpers for the CLI integration tests.
# Each test script sources this, runs tune in a fresh temp dir and ends with `finish`.
set -u
TUNE="${TUNE:?set TUNE to the tune binary}"
SRC="${SRC:?set SRC to the source tree}"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"
PASS=0
FAIL=0
check() { # check "what" command...
  local what=$1; shift
  if "$@"; then PASS=$((PASS + 1)); else FAIL=$((FAIL + 1)); echo "FAIL: $what" >&2; fi
}
contains() { grep -q -- "$2" "$1" || { echo "  '$2' not in $1:" >&2; sed 's/^/    /' "$1" | tail -15 >&2; return 1; }; }
lacks() { ! grep -q -- "$2" "$1" || { echo "  '$2' unexpectedly in $1" >&2; return 1; }; }
finish() { echo "$PASS passed, $FAIL failed"; [ "$FAIL" -eq 0 ]; }
# sql DB "SELECT ..." prints rows '|'-separated, like the sqlite3 CLI (python's sqlite3 module:
# present on the GPU machine too, where there is no sqlite3 CLI).
sql() { python3 -c 'import sqlite3,sys
c=sqlite3.connect("file:"+sys.argv[1]+"?mode=ro",uri=True)
for r in c.execute(sys.argv[2]): print("|".join("" if v is None else str(v) for v in r))' "$1" "$2"; }
