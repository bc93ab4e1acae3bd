#!/usr/bin/env bash
# device_verify_survey.sh OUTDIR: how far each shipped family's verified variants sit from the honest
# error (docs/measurement.md, tolerance.honest), on its adversarial second input set: a few random
# variants per problem of each recipe (BUDGET, default 6), then per recipe the results, ok, wrong,
# wrong for the honest rule, and the median and largest err_rel_l2 / honest_rel_l2 of the ok ones.
# The survey's database is kept in OUTDIR (lean). RECIPES: a subset ("recipe.lua[:problem,...]");
# STRATEGY=exhaustive with a BUDGET above the space size walks every config of the problems named.
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
  timeout "${RECIPE_S:-240}" build/tune run "$recipe" --db "$db" --strategy "${STRATEGY:-random}" --budget "${BUDGET:-6}" --seed 1 \
    --quiet "${probs[@]}" >>"$out/survey.run.txt" 2>&1
  echo "$recipe: exit $?" >>"$out/survey.run.txt"
done
python3 tools/lean_db.py "$db" "$out/verify_survey.db" >/dev/null 2>&1
python3 tools/bench/verify_survey.py "$db"
