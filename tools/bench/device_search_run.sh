#!/usr/bin/env bash
# device_search_run.sh: one device call (about 3-5 minutes on an H200) that measures, on the GPU,
# the default strategy (bayes) against exhaustive on recipes/softmax.lua, and how busy the GPU is
# in each (tune run's "GPU busy" line: share of the wall time spent inside the backend's measure).
#   1. tune run softmax.lua, default strategy, --budget BUDGET per problem (default 12: about 10 % of a softmax space), seed 1;
#   2. the same with --strategy exhaustive and no budget (every config: the reference optimum);
# then a table per problem: bayes's best at BUDGET evaluations against the exhaustive optimum, and the
# GPU-busy lines of both runs. usage: tools/bench/device_search_run.sh OUTDIR
set -u
TUNE=${TUNE:-build/tune}
out=${1:?OUTDIR}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p "$out" /tmp/srch
rm -f /tmp/srch/*.db
timeout 120 "$TUNE" run recipes/softmax.lua --db /tmp/srch/bayes.db --seed 1 --quiet --budget "${BUDGET:-12}" > "$out/bayes.log" 2>&1
echo "bayes rc=$?" > "$out/status.txt"
timeout 240 "$TUNE" run recipes/softmax.lua --db /tmp/srch/exh.db --seed 1 --quiet --strategy exhaustive > "$out/exhaustive.log" 2>&1
echo "exhaustive rc=$?" >> "$out/status.txt"
for d in bayes exh; do python3 tools/lean_db.py /tmp/srch/$d.db "$out/$d.db" > /dev/null 2>&1; done
cat "$out/status.txt"
echo "== GPU busy (per recipe of the file)"
grep -H "GPU busy" "$out/bayes.log" "$out/exhaustive.log" | sed "s#$out/##"
python3 - /tmp/srch/bayes.db /tmp/srch/exh.db <<'PY'
import sqlite3, sys
def best(path):
    c = sqlite3.connect("file:" + path + "?mode=ro", uri=True)
    q = """select rc.name, p.name, min(r.median_ns), count(*) from results r join problems p on p.id=r.problem_id
           join recipes rc on rc.id=r.recipe_id group by rc.name, p.name"""
    ok = {(a, b): m for a, b, m, n in c.execute(q.replace("group", "where r.status='ok' group"))}
    n = {(a, b): k for a, b, m, k in c.execute(q)}
    return ok, n
b, bn = best(sys.argv[1]); e, en = best(sys.argv[2])
print("| recipe / problem | bayes evals | bayes best us | exhaustive evals | optimum us | optimum/bayes |")
print("| --- | --- | --- | --- | --- | --- |")
for k in sorted(set(b) | set(e)):
    bb, ee = b.get(k), e.get(k)
    r = f"{ee / bb:.4f}" if bb and ee else "-"
    f = lambda v: f"{v / 1e3:.2f}" if v else "-"
    print(f"| {k[0]} / {k[1]} | {bn.get(k, 0)} | {f(bb)} | {en.get(k, 0)} | {f(ee)} | {r} |")
PY
