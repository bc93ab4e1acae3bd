#!/usr/bin/env bash
# device_tails.sh OUTDIR: on a GPU, every variant of the shape-general recipes verified at shapes
# that are not tile multiples (GEMM tails, vocabulary-length softmax rows, odd RMSNorm rows, paged
# decode with mixed lengths). STEPS: a subset. Each step has a time cap; its database keeps what it got. Prints the
# result statuses per recipe: anything `wrong` is a broken kernel.
set -u
out=${1:?usage: device_tails.sh OUTDIR}
mkdir -p "$out"; out=$(cd "$out" && pwd)
cd "$(dirname "$0")/../.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
T=build/tune
STEPS=${STEPS:-gemm_tails gemm_f16_tails decode softmax rmsnorm}
step() { # step NAME SECONDS tune-run-args...; only the STEPS named
  local name=$1 secs=$2; shift 2
  case " $STEPS " in *" $name "*) ;; *) return 0 ;; esac
  timeout -s INT "$secs" "$T" run "$@" --db "$out/$name.db" --quiet > "$out/$name.log" 2>&1
  echo "$name: exit $? ($(tail -1 "$out/$name.log" | cut -c1-120))"
}
gemm_tails=""
for s in m1000n1000k1000 m3000n1000k1032 m37n4104k4096 m100n1000k1032 m5n4104k1056; do
  gemm_tails="$gemm_tails --problem ${s}_row --problem ${s}_col"
done
step gemm_tails "${GEMM_S:-200}" recipes/gemm.lua --strategy exhaustive --no-warm-start $gemm_tails
step gemm_f16_tails "${F16_S:-60}" recipes/gemm/f16.lua --strategy exhaustive --no-warm-start \
  --problem m1000n1000k1000_col --problem m37n4104k4096_row --problem m5n4104k1056_col --problem m5n4104k1056_row
step decode "${DECODE_S:-150}" recipes/attention/decode.lua --strategy exhaustive \
  --problem b32hq32hkv8d128p16x256 --problem b32hq64hkv8d64p16x128
step softmax "${SOFTMAX_S:-90}" recipes/softmax.lua --budget 10 --problem cols=32000 --problem cols=128256 \
  --problem cols=151936 --problem cols=50257 --problem cols=4000 --problem cols=5120 --problem cols=8200
step rmsnorm "${RMSNORM_S:-60}" recipes/rmsnorm.lua --budget 10 --problem H=4000 --problem H=5120 --problem H=8200 --problem H=2049
python3 - "$out" <<'PY'
import glob, os, sqlite3, sys
print("| database | recipe | ok | wrong | other |")
print("| --- | --- | --- | --- | --- |")
for db in sorted(glob.glob(os.path.join(sys.argv[1], "*.db"))):
    c = sqlite3.connect(db)
    for rc, ok, wrong, other in c.execute(
            "SELECT rc.name, sum(r.status = 'ok'), sum(r.status = 'wrong'), sum(r.status NOT IN ('ok', 'wrong'))"
            " FROM results r JOIN recipes rc ON rc.id = r.recipe_id GROUP BY rc.name"):
        print(f"| {os.path.basename(db)} | {rc} | {ok} | {wrong} | {other} |")
    for rc, p, st, n, e in c.execute(
            "SELECT rc.name, p.name, r.status, count(*), min(substr(coalesce(r.error_text, ''), 1, 160))"
            " FROM results r JOIN recipes rc ON rc.id = r.recipe_id JOIN problems p ON p.id = r.problem_id"
            " WHERE r.status NOT IN ('ok', 'skipped') GROUP BY 1, 2, 3"):
        print(f"  {rc} {p}: {n} {st}: {e}")
PY
