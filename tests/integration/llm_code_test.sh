#!/usr/bin/env bash
# Code proposals of the LLM hook (docs/llm-hook.md) without a GPU (--compile-only): a scripted
# proposer edits the region tile_body of tests/fixtures/templates/llm_region. A valid edit becomes
# its own variant (own source, compile key, binary, config with origin llm-code:N) and is compiled
# for every problem of the recipe, also those --problem left out; code that does not compile ends
# compile_error and its proposal is rejected with the log; code outside the region, host code and
# inline-asm traps are refused before compiling, code whose PTX reads a timer or keeps module-scope
# state is refused after it (wrong, rejected); the run goes on throughout.
. "$(dirname "$0")/lib.sh"
RECIPE="$SRC/tests/fixtures/recipes/llm_region.lua"
SCRIPTED="python3 $SRC/tools/llm/scripted_proposer.py"

python3 - <<'PY'
import json
good = """  if (c < cols) {
    const float sc = __ldg(s + c);  // proposed: scale through the read-only path
    for (int i = 0; i < TILE_R; ++i) {
      const int r = r0 + i;
      if (r < rows) y[(size_t)r * cols + c] = __ldg(x + (size_t)r * cols + c) * sc;
    }
  }
"""
def code(c, why, values=None):
    p = {"kind": "code", "region": "tile_body", "code": c, "rationale": why}
    if values is not None: p["values"] = values
    return p
props = [
    code(good, "good: __ldg loads", {"TILE_C": 128, "TILE_R": 4}),
    code("  y[c] = undefined_name * 2.f;\n", "compile error"),
    code(good + "}\n__global__ void outside(float *p) {\n  p[0] = 1.f;\n", "escapes the region"),
    code("  __host__ int f();\n" + good, "host code"),
    code(good + "  asm volatile(\"trap;\");\n", "inline asm trap"),
    code(good, "bad values", {"TILE_C": 96, "TILE_R": 4}),
    code("  long long t0 = clock64();\n" + good + "  if (clock64() < t0) y[0] = 0.f;\n", "timer probe"),
    code("  static unsigned char seen[64];\n  if (!seen[threadIdx.x & 63]) seen[threadIdx.x & 63] = 1;\n  else return;\n" + good, "module state"),
    {"kind": "params", "values": {"TILE_C": 64, "TILE_R": 1}, "rationale": "plain config"},
]
json.dump([{"response": {"version": 1, "proposals": props}}], open("code.json", "w"))
PY
mkdir logs
"$TUNE" run "$RECIPE" --compile-only --db c.db --problem r2048c2048 --budget 8 --strategy llm \
  --proposer "$SCRIPTED --script $PWD/code.json --state $PWD/code.state --log-dir $PWD/logs" >run.txt 2>&1
rc=$?
check "the run exits 0 ($rc)" test $rc -eq 0
check "the request carries the region" python3 -c '
import json; r=json.load(open("logs/request-1.json"))
[g]=r["recipe"]["regions"]; assert g["name"]=="tile_body" and "y[(size_t)r * cols + c]" in g["source"], g'
q() { sql c.db "$1"; }
prop() { q "select status||'|'||reason from proposals where rationale='$1' order by id limit 1"; }
code_results() { # problem=status of a proposal's variant, in result order
  q "select group_concat(x) from (select p.name||'='||r.status x from results r join configs c on c.id=r.config_id
     join problems p on p.id=r.problem_id join proposals pr on c.origin='llm-code:'||pr.id where pr.rationale='$1' order by r.id)"
}
check "a code that reads %clock64 is refused from its PTX: wrong, rejected" \
  test "$(code_results 'timer probe')" = "r2048c2048=wrong,r1999c1001=wrong"
check "... with the reason" contains run.txt "rejected: failed on 2 of 2 problem(s): wrong on r2048c2048: refused: the code reads %clock64"
check "a code with module-scope state is refused from its PTX" contains run.txt "refused: the code declares a module-scope .global variable"
check "good edit: compiled on both problems, also the one --problem left out" \
  test "$(code_results 'good: __ldg loads')" = "r2048c2048=skipped,r1999c1001=skipped"
check "good edit: accepted with its verdict" test "$(prop 'good: __ldg loads')" = "accepted|compiled for 2 problem(s) (compile-only: not run)"
check "good edit: the run says it verifies other problems" contains run.txt "verifying 4 code proposal(s) made for other problems"
check "good edit: its base config is the proposed values" \
  test "$(q "select c.params_json from configs c join proposals p on c.origin='llm-code:'||p.id where p.rationale='good: __ldg loads'")" = '{"TILE_C":128,"TILE_R":4}'
k_code=$(q "select r.binary_key from results r join configs c on c.id=r.config_id where c.origin like 'llm-code:%' and r.status='skipped' limit 1")
k_tpl=$(q "select r.binary_key from results r join configs c on c.id=r.config_id where c.origin not like 'llm-code:%' and c.params_json='{\"TILE_C\":128,\"TILE_R\":4}' limit 1")
check "good edit: a binary of its own ($k_code)" test -n "$k_code" -a "$k_code" != "$k_tpl"
check "good edit: the spliced source compiled (cubin stored)" test "$(q "select length(cubin) > 0 from binaries where key='$k_code'")" = 1
check "compile error: compile_error on both problems" test "$(code_results 'compile error')" = "r2048c2048=compile_error,r1999c1001=compile_error"
check "compile error: the log names the mistake" test "$(q "select count(*) from results r join configs c on c.id=r.config_id where c.origin like 'llm-code:%' and r.error_text like '%undefined_name%'")" -eq 2
starts() { case "$1" in "$2"*) return 0;; *) echo "  '$1' does not start with '$2'" >&2; return 1;; esac; }
check "compile error: proposal rejected with the reason" starts "$(prop 'compile error')" "rejected|failed on 2 of 2 problem(s): compile_error on r2048c2048: scale_rows.cuh("
check "outside the region: refused" test "$(prop 'escapes the region')" = "rejected|code must stay inside region tile_body: unbalanced braces"
check "host code: refused" test "$(prop 'host code')" = "rejected|host-only construct in code: __host__"
check "asm trap: refused" test "$(prop 'inline asm trap')" = "rejected|code contains asm with trap"
check "bad base values: refused" test "$(prop 'bad values')" = "rejected|TILE_C=96 is not one of the recipe's values"
check "refused code never reaches the compiler" test "$(q "select count(*) from configs c join proposals p on c.origin='llm-code:'||p.id where p.status='rejected' and p.rationale not in ('compile error', 'timer probe', 'module state')")" -eq 0
check "the params proposal in the same answer is compiled" test "$(q "select count(*) from results r join configs c on c.id=r.config_id where c.origin like 'llm:%' and r.status='skipped'")" -eq 1
check "the run went on: the budget of 8 is spent on r2048c2048" \
  test "$(q "select count(*) from results r join problems p on p.id=r.problem_id where p.name='r2048c2048'")" -eq 8
check "the repeated answer is skipped, not compiled again" contains run.txt "(code) skipped: already proposed"
check "progress lines name the code variant" contains run.txt "llm-code:"
rid=$(q "select r.id from results r join configs c on c.id=r.config_id join proposals p on c.origin='llm-code:'||p.id where p.rationale='good: __ldg loads' limit 1")
"$TUNE" db show "$rid" --db c.db >show.txt
check "tune db show: the proposal with its code" python3 -c '
import json; s=json.load(open("show.txt")); p=s["proposal"]
assert p["kind"]=="code" and p["region"]=="tile_body" and "__ldg(s + c)" in p["code"] and s["config"]["origin"]=="llm-code:%d"%p["id"], p'

# a second run: the same code is the same variant (same config hash), its binary from the cache
"$TUNE" run "$RECIPE" --compile-only --db c.db --problem r2048c2048 --budget 2 --strategy llm \
  --proposer "$SCRIPTED --script $PWD/code.json --state $PWD/code2.state" >again.txt 2>&1
check "second run exits 0" test $? -eq 0
check "second run: one config row per code variant" test "$(q "select count(*) from configs where origin like 'llm-code:%'")" -eq 4
check "second run: the code variants come from the compile cache" contains again.txt "from the compile cache"

# tune db best (and so tune bundle) never ranks a code variant that failed on any problem.
# Synthetic rows (a fake GPU device and made-up timings), only to test the query.
python3 - c.db <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
dev = c.execute("insert into devices (kind, name, arch) values ('gpu', 'FAKE GPU', 'sm_90a') returning id").fetchone()[0]
rid = c.execute("select id from recipes limit 1").fetchone()[0]
probs = dict(c.execute("select name, id from problems"))
good = c.execute("select c.id from configs c join proposals p on c.origin='llm-code:'||p.id where p.rationale='good: __ldg loads'").fetchone()[0]
bad = c.execute("select c.id from configs c join proposals p on c.origin='llm-code:'||p.id where p.rationale='compile error'").fetchone()[0]
plain = c.execute("select id from configs where origin like 'llm:%'").fetchone()[0]
def put(cfg, prob, status, ns):
    c.execute("insert into results (recipe_id, device_id, config_id, problem_id, status, median_ns) values (?,?,?,?,?,?)",
              (rid, dev, cfg, probs[prob], status, ns))
put(plain, "r2048c2048", "ok", 30000.0); put(plain, "r1999c1001", "ok", 20000.0)
put(bad, "r2048c2048", "ok", 10000.0); put(bad, "r1999c1001", "wrong", None)   # fast, but wrong elsewhere
put(good, "r2048c2048", "ok", 25000.0); put(good, "r1999c1001", "ok", 40000.0)
c.commit()
PY
"$TUNE" db best --db c.db >best.txt 2>&1
check "db best: the code variant that failed elsewhere is not ranked" lacks best.txt "10.00 us"
check "db best: names a winning code variant" contains best.txt "+ code of proposal"
"$TUNE" db best --db c.db --json >best.json 2>&1
check "db best: the verified code variant wins where it is fastest, the plain config elsewhere" python3 -c '
import json; rows=json.load(open("best.json"))
got={r["problem"]: (r["median_ns"], r["config_origin"].split(":")[0]) for r in rows}
assert got=={"r2048c2048": (25000.0, "llm-code"), "r1999c1001": (20000.0, "llm")}, got'
finish
