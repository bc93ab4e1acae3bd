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
# skip_without_gpu LOG: exit 77 (ctest: skipped) when tune's output in LOG says there is no GPU
skip_without_gpu() {
  if grep -q "no NVIDIA driver\|no usable GPU\|reports no CUDA device" "$1"; then echo "skipped: no GPU"; exit 77; fi
}
finish() { echo "$PASS passed, $FAIL failed"; [ "$FAIL" -eq 0 ]; }
# sql DB "SELECT ..." prints rows '|'-separated, like the sqlite3 CLI (python's sqlite3 module:
# present on the GPU machine too, where there is no sqlite3 CLI).
sql() { python3 -c 'import sqlite3,sys
c=sqlite3.connect("file:"+sys.argv[1]+"?mode=ro",uri=True)
for r in c.execute(sys.argv[2]): print("|".join("" if v is None else str(v) for v in r))' "$1" "$2"; }
# synth_ok DB PROBLEM PARAMS_JSON [PROBLEM PARAMS_JSON ...]: mark a --compile-only database's compiled
# results ok with SYNTHETIC times (no GPU in these tests; nothing is a measurement, and the device is
# renamed to say so): each named (problem, config) is the winner at 500 ns, every other config
# 1000 ns + its id; skipped results stay skipped.
synth_ok() { python3 - "$@" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
winners = list(zip(sys.argv[2::2], sys.argv[3::2]))
db.execute("update devices set kind = 'gpu', name = 'synthetic CPU-test device (no measurement)'")
rows = db.execute("""select r.id, p.name, c.params_json, c.id from results r join problems p on p.id = r.problem_id
                     join configs c on c.id = r.config_id where r.error_text = 'compile-only'""").fetchall()
for rid, prob, params, cid in rows:
    t = 500 if (prob, params) in winners else 1000 + cid
    db.execute("""update results set status = 'ok', samples = 1, err_rel_l2 = 0, err_max_abs = 0, error_text = '',
                  median_ns = ?, min_ns = ?, max_ns = ?, stddev_ns = 0 where id = ?""", (t, t, t, rid))
db.commit()
PY
}
