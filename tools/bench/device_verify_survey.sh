#!/usr/bin/env bash
# device_verify_survey.sh OUTDIR: how far each shipped family's verified variants sit from the honest
# error (docs/measurement.md, tolerance.honest), on its adversarial second input set: a few random
# variants per problem of each recipe (BUDGET, default 6), then per recipe the results, ok, wrong,
# wrong for the honest rule, and the median and largest err_rel_l2 / honest_rel_l2 of the ok ones.
# The survey's database is kept in OUTDIR (lean). RECIPES: a subset ("recipe.lua[:problem,...]").
set -u
out=${1:?usage: device_verify_survey.sh OUTDIR}
mkdir -p "$out"
cd "$(dirname "$0")/../.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
db=/tmp/verify_survey.db
rm -f "$db"
for spec in ${RECIPES:-recipes/gemm.lua:m4096n4096k4096_row,m16n8192k8192_col,m1n8192k8192_row \
    recipes/gemm/f16.lua:m4096n4096k4096_row,m16n8192k8192_col recipes/softmax.lua:r4096c8192,r256c131072 \
    recipes/rmsnorm.lua:t4096h8192,t4096h8192add \
    recipes/attention/prefill.lua:b4h32s4096d128c,b16h16s1024d64 \
    recipes/attention/prefill_sm90.lua:b4h32s4096d128c,b16h16s1024d64 \
    recipes/attention/varlen.lua:b128t512hq32kv8d128c,b32t8192hq16kv16d64c \
    recipes/attention/decode.lua:b32hq32hkv8d128p16x256,b32hq64hkv8d64p16x128}; do
  recipe=${spec%%:*}; probs=()
  if [ "$spec" != "$recipe" ]; then
    IFS=, read -r -a list <<<"${spec#*:}"
    for p in "${list[@]}"; do probs+=(--problem "$p"); done
  fi
  timeout "${RECIPE_S:-240}" build/tune run "$recipe" --db "$db" --strategy random --budget "${BUDGET:-6}" --seed 1 \
    --quiet "${probs[@]}" >>"$out/survey.run.txt" 2>&1
  echo "$recipe: exit $?" >>"$out/survey.run.txt"
done
python3 tools/lean_db.py "$db" "$out/verify_survey.db" >/dev/null 2>&1
python3 - "$db" <<'PY'
import sqlite3, statistics, sys
c = sqlite3.connect(sys.argv[1])
print("recipe | results | ok | wrong | wrong (honest) | ok err/honest median | max")
for (name,) in c.execute("select distinct rc.name from results r join recipes rc on rc.id=r.recipe_id order by 1").fetchall():
    rows = c.execute("""select r.status, r.err_rel_l2, r.honest_rel_l2, coalesce(r.error_text,'') from results r
        join recipes rc on rc.id=r.recipe_id join configs g on g.id=r.config_id
        where rc.name=? and g.origin not like 'peer:%'""", (name,)).fetchall()
    ok = [r for r in rows if r[0] == "ok"]
    ratios = [r[1] / r[2] for r in ok if r[2] and r[2] > 0 and r[1] is not None and r[1] >= 0]
    wrong = [r for r in rows if r[0] == "wrong"]
    fmt = lambda v: "%.3f" % v if v is not None else "-"
    print(" | ".join([name, str(len(rows)), str(len(ok)), str(len(wrong)),
                      str(sum("honest" in r[3] for r in wrong)),
                      fmt(statistics.median(ratios)) if ratios else "-", fmt(max(ratios)) if ratios else "-"]))
PY
