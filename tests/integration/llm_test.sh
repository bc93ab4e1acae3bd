#!/usr/bin/env bash
# The LLM hook (issue 9, docs/llm-hook.md) on recorded data: proposals from a scripted proposer
# are measured and traced (origin llm:N, the proposals table, tune db show); every kind of bad
# answer is rejected with a clear message while the run goes on (random fills the batch); the
# OpenAI-compatible adapter works against a loopback chat-completions server.
. "$(dirname "$0")/lib.sh"
REC="$SRC/data/recorded/copy.db"
SCRIPTED="python3 $SRC/tools/llm/scripted_proposer.py"
run_llm() { # run_llm DB PROPOSER [more tune run options...]
  local db=$1 prop=$2; shift 2
  "$TUNE" run "$SRC/recipes/copy.lua" --device "replay:$REC" --db "$db" --problem 64MiB \
    --strategy llm --proposer "$prop" "$@"
}

# 1. round trip: seeded proposals, measured, traced
mkdir logs
export TUNE_TEST_SECRET=hidden TUNE_TEST_PASSED=visible
run_llm rt.db "$SCRIPTED --seed 3 --log-dir $PWD/logs" --budget 40 --seed 1 \
  --proposer-env TUNE_TEST_PASSED >rt.txt 2>&1
check "round trip exits 0" test $? -eq 0
n_llm=$(sql rt.db "select count(*) from results r join configs c on c.id=r.config_id where r.status='ok' and c.origin like 'llm:%'")
check "proposals were measured: ok results with origin llm:N ($n_llm)" test "$n_llm" -ge 5
n_acc=$(sql rt.db "select count(*) from proposals where status='accepted' and kind='params'")
check "accepted proposals are in the proposals table ($n_acc)" test "$n_acc" -eq "$n_llm"
bad_link=$(sql rt.db "select count(*) from configs c left join proposals p on 'llm:'||p.id=c.origin where c.origin like 'llm:%' and (p.id is null or p.status<>'accepted')")
check "every llm origin names an accepted proposal" test "$bad_link" -eq 0
rid=$(sql rt.db "select r.id from results r join configs c on c.id=r.config_id where c.origin like 'llm:%' limit 1")
"$TUNE" db show "$rid" --db rt.db >show.txt
check "tune db show shows the proposal" contains show.txt '"proposal"'
check "... with its request hash" contains show.txt '"request_hash"'
check "hashes are stored" test "$(sql rt.db "select count(*) from proposals where length(request_hash)=16 and length(response_hash)=16")" -ge 1
check "second request carries the best results so far" python3 -c '
import json,sys
r=json.load(open("logs/request-2.json"))
assert set(r)=={"version","recipe","problem","device","best","failures","budget"}, set(r)
assert r["version"]==1 and r["recipe"]["name"]=="copy" and r["problem"]["name"]=="64MiB"
assert [p["name"] for p in r["recipe"]["params"]][0]=="VEC_BYTES"
assert "BLOCK * MIN_BLOCKS <= 2048" in r["recipe"]["constraints"], r["recipe"]["constraints"]
assert r["best"] and "median_ns" in r["best"][0] and "GBps" in r["best"][0]
assert r["device"]["name"].startswith("NVIDIA") and r["device"]["sm_count"]>0
assert "N" in r["problem"]["dims"]
'
check "the request holds no tensor data" lacks logs/request-1.json '"src"'
check "a recipe parameter without an absent value has no absent field" lacks logs/request-1.json '"absent"'
# a parameter with an absent value (docs/recipes.md): the request names that value
mkdir logs_fp8
"$TUNE" run "$SRC/recipes/gemm/fp8.lua" --device "replay:$SRC/data/recorded/h200/gemm.fp8.db" --db fp8.db \
  --problem m4096n4096k7168_block --strategy llm --proposer "$SCRIPTED --seed 3 --log-dir $PWD/logs_fp8" \
  --budget 4 --seed 1 >fp8.txt 2>&1
check "llm run on gemm.fp8 exits 0" test $? -eq 0
check "the request gives PART_BUFFERS its absent value" python3 -c '
import json; r=json.load(open("logs_fp8/request-1.json"))
p={q["name"]: q for q in r["recipe"]["params"]}
assert p["PART_BUFFERS"].get("absent")==1 and "absent" not in p["BLOCK_M"], p'
check "the proposer's environment is cleared" python3 -c '
import json; e=json.load(open("logs/env-1.json"))
assert "TUNE_TEST_SECRET" not in e and e.get("TUNE_TEST_PASSED")=="visible" and "PATH" in e, sorted(e)'

# 2. bad answers: each rejected with a message; the run goes on (random fills the batch)
bad_case() { # bad_case NAME STEP_JSON EXPECTED_MESSAGE [options]
  local name=$1 step=$2 want=$3; shift 3
  echo "[$step]" >"$name.json"
  run_llm "$name.db" "$SCRIPTED --script $PWD/$name.json --state $PWD/$name.state" --budget 3 "$@" >"$name.txt" 2>&1
  check "$name: run exits 0" test $? -eq 0
  check "$name: says why" contains "$name.txt" "$want"
  check "$name: falls back to random" contains "$name.txt" "come from the random strategy"
  check "$name: the run went on (3 results)" test "$(sql "$name.db" "select count(*) from results where status='ok'")" -eq 3
  check "$name: stored as rejected" test "$(sql "$name.db" "select count(*) from proposals where status='rejected' and reason like '%${want//\'/\'\'}%'")" -ge 1
}
bad_case malformed '{"raw": "{\"version\": 1, \"proposals\": [ oops"}' "malformed JSON"
bad_case oversized '{"bytes": 2000000}' "larger than the 1048576 byte limit"
bad_case unknown_top '{"response": {"version": 1, "proposals": [], "note": 1}}' "unknown field 'note'"
bad_case version '{"response": {"version": 2, "proposals": []}}' "'version' must be 1"
bad_case exit_status '{"exit": 3, "stderr": "no key"}' "exited with status 3: no key"
t0=$(date +%s)
bad_case hang '{"sleep": 30}' "no answer within 1000 ms: killed" --proposer-timeout 1000
check "hang: killed promptly" test $(( $(date +%s) - t0 )) -lt 20

# 3. one answer mixing good and bad proposals: the good one is measured, the others reported
cat >mixed.json <<'EOF'
[{"response": {"version": 1, "proposals": [
  {"kind": "params", "values": {"VEC_BYTES": 16, "ILP": 2, "BLOCK": 256, "GRID_STRIDE": true, "MIN_BLOCKS": 2}, "rationale": "wide"},
  {"kind": "params", "values": {"VEC_BYTES": 16, "ILP": 2, "BLOCK": 256, "GRID_STRIDE": true, "MIN_BLOCKS": 1}, "confidence": 0.9},
  {"kind": "params", "values": {"VEC_BYTES": 16, "ILP": 8, "BLOCK": 1024, "GRID_STRIDE": true, "MIN_BLOCKS": 1}},
  {"kind": "params", "values": {"VEC_BYTES": 16, "ILP": 2, "BLOCK": 96, "GRID_STRIDE": true, "MIN_BLOCKS": 1}},
  {"kind": "params", "values": {"VEC_BYTES": 16, "ILP": 2, "BLOCK": 256, "GRID_STRIDE": true}},
  {"kind": "params", "values": {"VEC_BYTES": 16, "ILP": 2, "BLOCK": 256, "GRID_STRIDE": true, "MIN_BLOCKS": 2, "WARPS": 4}},
  {"kind": "params", "values": {"VEC_BYTES": 16, "ILP": 2, "BLOCK": 256, "GRID_STRIDE": true, "MIN_BLOCKS": 2}},
  {"kind": "magic"}
]}}]
EOF
run_llm mixed.db "$SCRIPTED --script $PWD/mixed.json --state $PWD/mixed.state" --budget 1 >mixed.txt 2>&1
check "mixed: run exits 0" test $? -eq 0
check "mixed: unknown proposal field" contains mixed.txt "unknown field 'confidence'"
check "mixed: out of the space" contains mixed.txt "violates the recipe's constraints"
check "mixed: value not in the list" contains mixed.txt "BLOCK=96 is not one of the recipe's values"
check "mixed: missing parameter" contains mixed.txt "missing parameter MIN_BLOCKS"
check "mixed: unknown parameter" contains mixed.txt "unknown parameter 'WARPS'"
check "mixed: duplicate skipped" contains mixed.txt "already measured or proposed"
check "mixed: bad kind" contains mixed.txt "'kind' must be"
check "mixed: no fallback when a proposal was valid" lacks mixed.txt "random strategy"
check "mixed: the valid proposal was measured" test "$(sql mixed.db "select c.params_json from results r join configs c on c.id=r.config_id where r.status='ok' and c.origin like 'llm:%'")" = '{"VEC_BYTES":16,"ILP":2,"BLOCK":256,"GRID_STRIDE":true,"MIN_BLOCKS":2}'
check "mixed: 1 accepted, 1 skipped, 6 rejected" test "$(sql mixed.db "select group_concat(status||'='||n) from (select status, count(*) n from proposals group by status order by status)")" = "accepted=1,rejected=6,skipped=1"

# 4. code proposals for a template region: validated; the valid one becomes a variant (replay has no
#    recording of new code: not_recorded, on both problems). Compiled and checked code proposals:
#    llm_code_test.sh (compile-only) and tests/gpu/llm_adversarial_test.sh.
mkdir -p tree/recipes && cp -r "$SRC/templates" tree/ && cp "$SRC/recipes/copy.lua" tree/recipes/
sed -i -e '/^                                          long long tile) {$/a // TUNE:REGION tile_body' \
       -e '/^  for (int i = 0; i < ILP; ++i) tune::store_g/a // TUNE:END' tree/templates/copy/copy.cuh
check "region markers in the test template" test "$(grep -c 'TUNE:' tree/templates/copy/copy.cuh)" -eq 2
python3 - <<'EOF'
import json
body = "  vec_t r[ILP];\n  const long long base = tile * BLOCK * ILP + threadIdx.x;\n  for (int i = 0; i < ILP; ++i) r[i] = src[base + i * BLOCK];\n  for (int i = 0; i < ILP; ++i) dst[base + i * BLOCK] = r[i];\n"
code = lambda region, c: {"kind": "code", "region": region, "code": c, "rationale": "test"}
props = [code("tile_body", body),
         code("nowhere", body),
         code("tile_body", "#include <stdio.h>\n" + body),
         code("tile_body", body + "}\n__global__ void evil() {\n"),
         code("tile_body", "__host__ void f();\n" + body),
         code("tile_body", body + "  asm volatile(\"trap;\");\n"),
         code("tile_body", "extern int x;\n" + body),
         code("tile_body", body + "// TUNE:END\n"),
         code("tile_body", "int main() { return 0; }\n")]
json.dump([{"response": {"version": 1, "proposals": props}}], open("code.json", "w"))
EOF
"$TUNE" run tree/recipes/copy.lua --device "replay:$REC" --db code.db --problem 64MiB --budget 2 \
  --strategy llm --proposer "$SCRIPTED --script $PWD/code.json --state $PWD/code.state" >code.txt 2>&1
check "code: run exits 0" test $? -eq 0
check "code: valid region code is stored" test "$(sql code.db "select count(*) from proposals where kind='code' and status='accepted' and region='tile_body' and code like '%threadIdx%'")" -eq 1
check "code: says it is accepted" contains code.txt "1 code proposal(s) accepted"
check "code: its variant is evaluated on both problems (not recorded in replay)" test "$(sql code.db "select group_concat(x) from (select p.name||'='||r.status x from results r join configs c on c.id=r.config_id join problems p on p.id=r.problem_id where c.origin like 'llm-code:%' order by r.id)")" = "64MiB=not_recorded,256MiB=not_recorded"
check "code: verdict stored" test "$(sql code.db "select count(*) from proposals where kind='code' and status='accepted' and reason like 'not measured%'")" -eq 1
check "code: unknown region" contains code.txt "no region 'nowhere' in the template (regions: tile_body)"
check "code: #include" contains code.txt "host-only construct in code: #include"
check "code: escaping the region" contains code.txt "must stay inside region tile_body: unbalanced braces"
check "code: __host__" contains code.txt "host-only construct in code: __host__"
check "code: asm trap" contains code.txt "asm with trap"
check "code: extern" contains code.txt "host-only construct in code: extern"
check "code: region marker" contains code.txt "it contains a region marker"
check "code: main(" contains code.txt "host-only construct in code: main"
check "code: the rest of the budget measured from random" test "$(sql code.db "select count(*) from results where status='ok'")" -eq 1

# 5. usage errors
"$TUNE" run "$SRC/recipes/copy.lua" --device "replay:$REC" --db u.db --strategy llm >u.txt 2>&1
check "--strategy llm without --proposer is refused" test $? -eq 2
check "... saying what is missing" contains u.txt "needs --proposer"

# 6. the OpenAI-compatible adapter against a loopback server (bounded: 4 requests)
python3 "$SRC/tests/integration/llm_chat_server.py" port.txt chat.log 4 &
srv=$!
for _ in $(seq 100); do [ -s port.txt ] && break; sleep 0.1; done
port=$(cat port.txt)
export TEST_LLM_KEY=sk-loopback
"$TUNE" run "$SRC/recipes/copy.lua" --device "replay:$REC" --db oa.db --problem 64MiB --budget 3 \
  --strategy llm --proposer-env TEST_LLM_KEY \
  --proposer "python3 $SRC/tools/llm/openai_proposer.py --url http://127.0.0.1:$port/v1 --model test-model --key-env TEST_LLM_KEY --timeout 20" \
  >oa.txt 2>&1
check "openai adapter: run exits 0" test $? -eq 0
check "openai adapter: its proposals were measured" test "$(sql oa.db "select count(*) from results r join configs c on c.id=r.config_id where r.status='ok' and c.origin like 'llm:%'")" -eq 3
check "openai adapter: request shape and key" python3 -c '
import json; e=json.loads(open("chat.log").readline())
assert e=={"path":"/v1/chat/completions","model":"test-model","auth":"Bearer sk-loopback","roles":["system","user"],"request_version":1,"budget":3}, e'

# 7. schema 1 -> 3: a version-1 database (made here from the recording by undoing migrations 2 and 3,
# as files recorded before them are) is read as is and migrated by a write
cp "$REC" old.db
python3 -c 'import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.executescript("""DROP TABLE IF EXISTS proposals;
  ALTER TABLE results DROP COLUMN sm_mhz; ALTER TABLE results DROP COLUMN mem_mhz;
  ALTER TABLE results DROP COLUMN clock_reasons; PRAGMA user_version = 1;""")' old.db
check "the old file is schema 1" test "$(sql old.db "pragma user_version")" -eq 1
"$TUNE" db best --db old.db >old_best.txt 2>&1
check "a version-1 file opens read-only" test $? -eq 0
n_before=$(sql old.db "select count(*) from results")
"$TUNE" run "$SRC/recipes/copy.lua" --device "replay:$REC" --db old.db --problem 64MiB --budget 1 --quiet >old_run.txt 2>&1
schema_now=$(sed -n 's/^#define DB_SCHEMA_VERSION \([0-9]*\).*/\1/p' "$SRC/db/db.h")
check "a version-1 file migrates on a write (to schema $schema_now)" test "$(sql old.db "pragma user_version")" -eq "$schema_now"
check "... with the proposals table" test "$(sql old.db "select count(*) from sqlite_schema where name='proposals'")" -eq 1
check "... keeping its results" test "$(sql old.db "select count(*) from results")" -ge "$n_before"
kill "$srv" 2>/dev/null
wait "$srv" 2>/dev/null
finish
