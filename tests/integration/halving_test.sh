#!/usr/bin/env bash
# Successive halving (tune run --halving, docs/search.md) on recorded data, no GPU: quick-only
# results are stored ok with samples 3 and their mark, contenders fully timed (both passes'
# time charged), the best equal to the run without halving, recorded measure time saved;
# tune db best ranks quick-only results last and says so; the recipe field and the flags;
# tune-bench-search --halving. Without --halving nothing changes (no mark, no extra line).
. "$(dirname "$0")/lib.sh"
BENCH_SEARCH="${BENCH_SEARCH:?set BENCH_SEARCH to the tune-bench-search binary}"
REC="$SRC/data/recorded/copy.db"
run() { "$TUNE" run "$SRC/recipes/copy.lua" --device "replay:$REC" --strategy exhaustive --quiet "$@"; }
run --db plain.db >plain.txt 2>&1
check "plain run exits 0" test $? -eq 0
run --db h.db --halving >h.txt 2>&1
check "halving run exits 0" test $? -eq 0
check "plain run says nothing of halving" lacks plain.txt "halving"
check "plain db holds no quick-only result" test "$(sql plain.db "select count(*) from results where error_text like 'halving%' or samples = 3")" = 0
check "halving run announces it" contains h.txt "halving: each variant is verified and timed with 3 samples first"
check "halving run sums it up" contains h.txt "halving (margin 10 %): "
n_plain=$(sql plain.db "select count(*) from results")
n_h=$(sql h.db "select count(*) from results")
check "same number of results ($n_h vs $n_plain)" test "$n_h" = "$n_plain"
n_q=$(sql h.db "select count(*) from results where error_text like 'halving: quick timing only (3 samples), not a contender%'")
n_qok=$(sql h.db "select count(*) from results where error_text like 'halving: quick%' and status = 'ok' and samples = 3")
n_full=$(sql h.db "select count(*) from results where status = 'ok' and (error_text is null or error_text = '')")
check "some results kept a quick timing ($n_q)" test "$n_q" -gt 0
check "quick-only results are ok with samples 3 ($n_qok of $n_q)" test "$n_qok" = "$n_q"
check "some were timed fully ($n_full)" test "$n_full" -gt 0
check "every result is one or the other ($n_q + $n_full = $n_h)" test $((n_q + n_full)) = "$n_h"
check "the summary counts them" contains h.txt "$n_q verified variant(s) kept a quick timing (3 samples), $n_full timed fully after it"
check "replay says it cannot re-time" test "$(sql h.db "select count(*) from results where error_text like '%replay cannot re-time%'")" = "$n_q"
# per config, against the recording: contenders carry the recorded samples and both passes' time,
# quick-only ones the recorded median and 3/samples of the recorded time
python3 - "$REC" h.db plain.db >cmp.txt <<'PY'
import sqlite3, sys
def rows(f):
    c = sqlite3.connect(f)
    return {(r[0], r[1]): r[2:] for r in c.execute(
        "select c.hash, p.hash, r.median_ns, r.samples, r.measure_ms, coalesce(r.error_text, '') from results r"
        " join configs c on c.id = r.config_id join problems p on p.id = r.problem_id where r.status = 'ok'")}
rec, h, plain = rows(sys.argv[1]), rows(sys.argv[2]), rows(sys.argv[3])
bad = []
for k, (med, samp, ms, note) in h.items():
    rmed, rsamp, rms, _ = rec[k]
    if med != rmed: bad.append(("median", k))
    if note.startswith("halving: quick"):
        if samp != 3 or abs(ms - rms * 3 / rsamp) > 1e-6 * rms: bad.append(("quick", k, samp, ms, rms, rsamp))
    else:
        if samp != rsamp: bad.append(("samples", k))
        want = rms + (rms * 3 / rsamp if rsamp > 3 else rms)
        if abs(ms - want) > 1e-6 * want: bad.append(("full time", k, ms, want))
print("mismatches", len(bad), bad[:3])
print("measure_ms plain %.1f halving %.1f" % (sum(v[2] for v in plain.values()), sum(v[2] for v in h.values())))
PY
check "every stored figure follows the recording" contains cmp.txt "mismatches 0 "
saved=$(python3 -c "import sys; t=open('cmp.txt').read().split('measure_ms plain ')[1].split(); print(int(float(t[0]) > float(t[2])))")
check "recorded measure time saved ($(tail -1 cmp.txt))" test "$saved" = 1
# the best is the one without halving, and it is fully timed
"$TUNE" db best --db plain.db --json >best_plain.json
"$TUNE" db best --db h.db --json >best_h.json
same=$(python3 -c "
import json
a = {r['problem']: (r['config_hash'], r['median_ns']) for r in json.load(open('best_plain.json'))}
b = {r['problem']: (r['config_hash'], r['median_ns'], r['quick_only']) for r in json.load(open('best_h.json'))}
print(int(len(a) == 2 and all(b[p][:2] == a[p] and b[p][2] == 0 for p in a)))")
check "db best with halving equals db best without, fully timed" test "$same" = 1
# db best never prefers a quick-only result: make one the fastest, then the only one
cp h.db t.db
python3 -c "
import sqlite3
c = sqlite3.connect('t.db')
c.execute(\"update results set median_ns = 1.0 where id = (select r.id from results r join problems p on p.id = r.problem_id where p.name = '64MiB' and r.error_text like 'halving: quick%' limit 1)\")
c.commit()"
"$TUNE" db best --db t.db --problem 64MiB --json >t1.json
got=$(python3 -c "import json; r=json.load(open('t1.json'))[0]; print('%.2f %d' % (r['median_ns'], r['quick_only']))")
want=$(python3 -c "import json; r=[r for r in json.load(open('best_plain.json')) if r['problem']=='64MiB'][0]; print('%.2f 0' % r['median_ns'])")
check "a faster quick-only result does not win ($got vs $want)" test "$got" = "$want"
python3 -c "
import sqlite3
c = sqlite3.connect('t.db')
c.execute(\"delete from results where status = 'ok' and (error_text is null or error_text not like 'halving: quick%')\")
c.commit()"
"$TUNE" db best --db t.db --problem 64MiB --json >t2.json
check "with nothing else, the quick-only result is the best, marked" test "$(python3 -c "import json; r=json.load(open('t2.json'))[0]; print('%.1f %d' % (r['median_ns'], r['quick_only']))")" = "1.0 1"
"$TUNE" db best --db t.db --problem 64MiB >t2.txt
check "the table says it is a quick timing only" contains t2.txt "quick timing only (halving): no fully timed result"
"$TUNE" db best --db h.db >best_h.txt
check "a fully timed best is not flagged" lacks best_h.txt "quick timing only"
# the margin: a wider one leaves fewer quick-only results
run --db wide.db --halving=0.5 >wide.txt 2>&1
n_wide=$(sql wide.db "select count(*) from results where error_text like 'halving: quick%'")
check "--halving=0.5 keeps fewer quick-only ($n_wide < $n_q)" test "$n_wide" -lt "$n_q"
check "--halving=0.5 says its margin" contains wide.txt "halving (margin 50 %)"
"$TUNE" run "$SRC/recipes/copy.lua" --halving=1.5 --db bad.db >bad.txt 2>&1
check "--halving=1.5 is refused (rc $?)" contains bad.txt "want a margin in (0, 1)"
# the recipe's field, and the command line over it
sed 's/^  name = "copy",$/  name = "copy",\n  halving = 0.2,/' "$SRC/recipes/copy.lua" >"$SRC/recipes/.copy_halving_test.lua"
rr() { "$TUNE" run "$SRC/recipes/.copy_halving_test.lua" --device "replay:$REC" --strategy exhaustive --quiet "$@"; }
rr --db f1.db >f1.txt 2>&1
rr --db f2.db --no-halving >f2.txt 2>&1
rr --db f3.db --halving=0.05 >f3.txt 2>&1
rr --db f4.db --halving >f4.txt 2>&1
rm -f "$SRC/recipes/.copy_halving_test.lua"
check "the recipe's halving = 0.2 turns it on" contains f1.txt "halving (margin 20 %)"
check "--no-halving wins over the recipe" lacks f2.txt "halving"
check "--no-halving stores no quick-only result" test "$(sql f2.db "select count(*) from results where error_text like 'halving%'")" = 0
check "--halving=0.05 wins over the recipe" contains f3.txt "halving (margin 5 %)"
check "a plain --halving takes the recipe's margin" contains f4.txt "halving (margin 20 %)"
# the default strategy: the same configs evaluated, the same best, with and without
SREC="$SRC/data/recorded/softmax.db"
"$TUNE" run "$SRC/recipes/softmax.lua" --device "replay:$SREC" --db sb.db --seed 3 --budget 30 --quiet >sb.txt 2>&1
"$TUNE" run "$SRC/recipes/softmax.lua" --device "replay:$SREC" --db sh.db --seed 3 --budget 30 --halving --quiet >sh.txt 2>&1
cfgs() { sql "$1" "select r.status, c.hash, p.hash, r.median_ns from results r join configs c on c.id = r.config_id join problems p on p.id = r.problem_id order by 2, 3"; }
check "bayes evaluates the same configs with the same answers" test "$(cfgs sb.db | md5sum)" = "$(cfgs sh.db | md5sum)"
check "bayes with halving kept some quick timings" contains sh.txt "kept a quick timing"
"$TUNE" db best --db sb.db | sed 's/  *[0-9]*  *[-0-9]*  *[A-Z_]*=.*//' >sb_best.txt
"$TUNE" db best --db sh.db | sed 's/  *[0-9]*  *[-0-9]*  *[A-Z_]*=.*//' >sh_best.txt
check "bayes: the same best medians" cmp -s sb_best.txt sh_best.txt
# tune-bench-search --halving: the extra row and the time spent; nothing of it without the flag
"$BENCH_SEARCH" "$SRC/recipes/copy.lua" --repeats 5 --jobs 2 >bs.txt 2>&1
"$BENCH_SEARCH" "$SRC/recipes/copy.lua" --repeats 5 --jobs 2 --halving >bh.txt 2>&1
check "bench-search without --halving shows none" lacks bs.txt "halving"
check "bench-search --halving adds the bayes+halving row" contains bh.txt "^bayes+halving "
check "bench-search --halving reports the time spent" contains bh.txt "halving (bayes, margin 10 %)"
line50=$(grep -m1 '^ *50% (' bh.txt)
less=$(echo "$line50" | sed 's/.*): *\([0-9.]*\) s without, *\([0-9.]*\) s with.*/\1 \2/' | awk '{ print ($2 < $1) }')
check "halving spends less recorded time by 50 % of the evaluations ($line50)" test "$less" = 1
check "and finds the same best on every seed" contains bh.txt "best found differs on 0 of 5 seeds"
finish
