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
