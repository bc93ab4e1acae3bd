#!/usr/bin/env bash
# device_families.sh OUTDIR: on a GPU, tune the recipes in RECIPES (default: the MoE, FP8 and
# ragged-attention families) with a budget per problem, then re-time each problem's best variants
# against the peers in the same call (`tune compare`, interleaved rounds, burst timing).
# Writes OUTDIR/<recipe>.db (results), OUTDIR/<recipe>.log, OUTDIR/compare.md (the tables) and
# prints the verification counts per recipe (anything `wrong` is a broken kernel) and the tables.
# env: RECIPES (recipe files), BUDGET (evaluations per problem, default 40), RUN_S (seconds per
#   tune run, default 240), ROUNDS (default 3), TOPK (default 2), COMPARE_S (default 240),
#   TIMING (burst|sustained|both, default burst), EXTRA_RUN (more tune run options)
set -u
out=${1:?usage: device_families.sh OUTDIR}
mkdir -p "$out"; out=$(cd "$out" && pwd)
cd "$(dirname "$0")/../.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PYTHONUNBUFFERED=1
RECIPES=${RECIPES:-recipes/moe/grouped.lua recipes/gemm/fp8.lua recipes/attention/varlen.lua}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu \
  --format=csv > "$out/gpu.txt" 2>&1
for rf in $RECIPES; do
  stem=$(echo "${rf#recipes/}" | sed 's|/|.|g; s|\.lua$||')
  db="$out/$stem.db"
  echo "== $(date -u +%H:%M:%S) tune run $rf (budget ${BUDGET:-40} per problem)"
  timeout -s INT "${RUN_S:-240}" build/tune run "$rf" --db "$db" --budget "${BUDGET:-40}" --quiet ${EXTRA_RUN:-} \
    > "$out/$stem.log" 2>&1
  echo "   exit $? ($(grep -E '^[a-z_.]+: [0-9]+ results' "$out/$stem.log" | tr '\n' ' ' | cut -c1-200))"
  echo "== $(date -u +%H:%M:%S) tune compare $rf"
  timeout -s INT "${COMPARE_S:-240}" build/tune compare "$rf" --db "$db" --rounds "${ROUNDS:-3}" --top-k "${TOPK:-2}" \
    --timing "${TIMING:-burst}" -o "$out/compare.md" >> "$out/$stem.log" 2>&1
  echo "   exit $?"
done
python3 - "$out" <<'PY'
import glob, os, sqlite3, sys
print("| database | recipe | problem | ok | wrong | other | first error |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for db in sorted(glob.glob(os.path.join(sys.argv[1], "*.db"))):
    c = sqlite3.connect(db)
    for rc, p, ok, wrong, other, e in c.execute(
            "SELECT rc.name, p.name, sum(r.status = 'ok'), sum(r.status = 'wrong'),"
            " sum(r.status NOT IN ('ok', 'wrong', 'skipped')),"
            " min(CASE WHEN r.status NOT IN ('ok', 'skipped') THEN substr(coalesce(r.error_text, ''), 1, 100) END)"
            " FROM results r JOIN recipes rc ON rc.id = r.recipe_id JOIN problems p ON p.id = r.problem_id"
            " JOIN configs cf ON cf.id = r.config_id WHERE cf.origin NOT LIKE 'peer:%' GROUP BY 1, 2"):
        print(f"| {os.path.basename(db)} | {rc} | {p} | {ok} | {wrong} | {other} | {e or ''} |")
PY
[ -f "$out/compare.md" ] && cat "$out/compare.md"
