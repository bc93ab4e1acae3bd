#!/usr/bin/env bash
# Adversarial code proposals on a GPU (issue 9, docs/llm-hook.md): a scripted proposer sends region
# code for tests/fixtures/templates/llm_region (tests/fixtures/llm/adversarial.py says what each
# does) and every cheat must end with the right failure status and reason on the right problems,
# while the run goes on, the good proposal is verified and timed on both problems, the plain configs
# of the same run stay ok, and `tune db best` never ranks a cheat. Skipped (77) without a GPU.
# OUT=DIR (optional): the run's log, the proposals and a lean copy of the database are kept there.
. "$(dirname "$0")/../integration/lib.sh"
RECIPE="$SRC/tests/fixtures/recipes/llm_region.lua"
python3 "$SRC/tests/fixtures/llm/adversarial.py" adv.json
"$TUNE" run "$RECIPE" --device cuda:0 --db a.db --strategy llm --budget 14 --timeout 4000 --seed 3 \
  --proposer "python3 $SRC/tools/llm/scripted_proposer.py --script $PWD/adv.json --state $PWD/adv.state" >run.txt 2>&1
rc=$?
skip_without_gpu run.txt
keep() {
  [ -n "${OUT:-}" ] || return 0
  mkdir -p "$OUT" && cp run.txt "$OUT/llm_adversarial_run.txt"
  python3 "$SRC/tools/lean_db.py" a.db "$OUT/llm_adversarial.db" >/dev/null 2>&1
}
trap 'keep; rm -rf "$WORK"' EXIT
grep -v "^llm: request" run.txt | cut -c1-220
check "the run completes (rc $rc)" test $rc -eq 0

# status of a case's variant on a problem, and its error text
st() { sql a.db "select r.status from results r join configs c on c.id=r.config_id join problems p on p.id=r.problem_id
  join proposals pr on c.origin='llm-code:'||pr.id where pr.rationale='$1' and p.name='$2' order by r.id desc limit 1"; }
er() { sql a.db "select r.error_text from results r join configs c on c.id=r.config_id join problems p on p.id=r.problem_id
  join proposals pr on c.origin='llm-code:'||pr.id where pr.rationale='$1' and p.name='$2' order by r.id desc limit 1"; }
verdict() { sql a.db "select status from proposals where rationale='$1' and kind='code' order by id limit 1"; }
has() { case "$1" in *"$2"*) return 0;; *) echo "  '$2' not in: ${1:0:300}" >&2; return 1;; esac; }
expect() { # expect CASE PROBLEM STATUS REASON-SUBSTRING
  local got; got=$(st "$1" "$2")
  check "$1 on $2 is $3 (got '$got')" test "$got" = "$3"
  [ -n "$4" ] && check "$1 on $2 says why" has "$(er "$1" "$2")" "$4"
}
for p in r2048c2048 r1999c1001; do
  expect good "$p" ok ""
  expect stale_nothing "$p" wrong "NaN/Inf elements"
  expect stale_first_launch "$p" wrong "refused: the code declares a module-scope .global variable"
  expect timer_probe "$p" wrong "refused: the code reads %clock64"
  expect zero_input "$p" wrong "input x was modified"
  expect side_stream "$p" compile_error "device-side kernel launch"
  expect oob_near "$p" wrong "out-of-bounds write: 512 byte(s) after the end of output y"
  expect oob_far "$p" crash ""
  expect trap "$p" crash ""
  expect spin "$p" timeout "watchdog"
done
expect skip_partial r2048c2048 ok ""
expect skip_partial r1999c1001 wrong "NaN/Inf elements"
check "good: verified (err 0) and timed on both problems" \
  test "$(sql a.db "select count(*) from results r join configs c on c.id=r.config_id join proposals pr on c.origin='llm-code:'||pr.id
    where pr.rationale='good' and r.status='ok' and r.err_rel_l2=0 and r.median_ns>0 and r.samples>=10")" -eq 2
check "good: its proposal is accepted" test "$(verdict good)" = accepted
for c in stale_nothing stale_first_launch timer_probe zero_input side_stream skip_partial oob_near oob_far trap spin; do
  check "$c: its proposal is rejected" test "$(verdict "$c")" = rejected
done
check "skip_partial: the verdict names the problem it fails on" \
  has "$(sql a.db "select reason from proposals where rationale='skip_partial' and kind='code' order by id limit 1")" "wrong on r1999c1001"
check "the run went on: the random configs after the cheats are ok" \
  test "$(sql a.db "select count(*) from results r join configs c on c.id=r.config_id where c.origin='random' and r.status='ok'")" -ge 3
"$TUNE" db best --db a.db --json >best.json 2>&1
check "db best ranks no cheat" python3 -c '
import json, sqlite3
rows = json.load(open("best.json")); assert len(rows) == 2, rows
c = sqlite3.connect("a.db")
for r in rows:
    o = r["config_origin"]
    if o.startswith("llm-code:"):
        why = c.execute("select rationale from proposals where id=?", (int(o[9:]),)).fetchone()[0]
        assert why == "good", (r["problem"], why)'
"$TUNE" db show "$(sql a.db "select r.id from results r join configs c on c.id=r.config_id join proposals pr on c.origin='llm-code:'||pr.id where pr.rationale='good' limit 1")" --db a.db >show.txt
check "db show: the good variant's proposal and code" python3 -c '
import json; s = json.load(open("show.txt")); assert s["proposal"]["rationale"] == "good" and "__ldg" in s["proposal"]["code"], s["proposal"]'
echo
echo "case                 r2048c2048     r1999c1001     verdict"
for c in good stale_nothing stale_first_launch zero_input side_stream skip_partial oob_near oob_far trap spin; do
  printf "%-20s %-14s %-14s %s\n" "$c" "$(st $c r2048c2048)" "$(st $c r1999c1001)" "$(verdict $c)"
done
finish
