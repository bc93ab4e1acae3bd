#!/usr/bin/env bash
# device_model.sh OUTDIR tune|run: the model owner's path on a GPU (docs/model.md).
#   tune: the Llama example's problems (examples/llama/run.py --shapes-out) tuned with
#         `tune run --problems-from` into OUTDIR/model.db, bundled into OUTDIR/model.bundle
#         (a lean copy of the database, compile cache dropped, as OUTDIR/model.lean.db)
#   run:  the model stock and on the bundle's kernels (examples/llama/run.py), accuracy and speed
# Env: PROMPTS (default 100,256,512,1000), LAYERS (2), BUDGET (16 evaluations per problem).
set -u
out=${1:?usage: device_model.sh OUTDIR tune|run}; phase=${2:?usage: device_model.sh OUTDIR tune|run}
mkdir -p "$out"; out=$(cd "$out" && pwd)
cd "$(dirname "$0")/../.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
prompts=${PROMPTS:-100,256,512,1000}; layers=${LAYERS:-2}; budget=${BUDGET:-16}
T=build/tune
if [ "$phase" = tune ]; then
  python3 examples/llama/run.py --shapes-out "$out/shapes.jsonl" --layers "$layers" --prompts "$prompts" || exit 1
  for r in recipes/gemm.lua recipes/rmsnorm.lua recipes/attention/varlen.lua recipes/attention/decode.lua; do
    "$T" run "$r" --problems-from "$out/shapes.jsonl" --db "$out/model.db" --budget "$budget" --seed 1 --quiet \
      > "$out/tune-$(basename "$r" .lua).log" 2>&1
    echo "$r: exit $? ($(grep -c '^selection' "$out/tune-$(basename "$r" .lua).log") selections)"
  done
  "$T" bundle --db "$out/model.db" --recipe gemm,rmsnorm,attention.varlen,attention.decode \
    -o "$out/model.bundle" > "$out/bundle.log" 2>&1
  echo "bundle: exit $? ($(tail -1 "$out/bundle.log"))"
  python3 tools/lean_db.py "$out/model.db" "$out/model.lean.db" && rm -f "$out/model.db" "$out"/model.db-*
elif [ "$phase" = run ]; then
  PYTHONPATH=$PWD/python/src TUNERT_LIBRARY=$PWD/build/lib/libtunert.so \
    python3 examples/llama/run.py --bundle "${BUNDLE:-$out/model.bundle}" --layers "$layers" --prompts "$prompts" \
      --compile --json-out "$out/model_run.json" 2>&1 | tee "$out/model_run.log" | tail -12
else
  echo "device_model.sh: phase tune or run" >&2; exit 2
fi
