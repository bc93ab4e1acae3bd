#!/usr/bin/env bash
# softmax_cluster_run.sh: run every binary softmax_cluster_build.sh listed (on a GPU machine), each
# on its problem's rows; one log per binary under OUTDIR and a short table last.
# Usage: tools/check/softmax_cluster_run.sh OUTDIR [samples]   env: DIR (default build/check)
# Runtime: a few seconds per binary (the CPU reference of 32 Mi elements takes most of it).
set -u
out=${1:?OUTDIR}
samples=${2:-50}
cd "$(dirname "$0")/../.."
DIR=${DIR:-build/check}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p "$out"
[ -f "$DIR/softmax_cluster_list.txt" ] || { echo "no $DIR/softmax_cluster_list.txt: run tools/check/softmax_cluster_build.sh first"; exit 1; }
fail=0
table=""
while read -r tag rows; do
  log="$out/softmax_cluster_$tag.log"
  timeout 30 "$DIR/softmax_cluster_$tag" "$rows" "$samples" >"$log" 2>&1
  rc=$?
  [ $rc -eq 0 ] || fail=1
  chk=$(grep -o "check vs fp64 CPU: .*" "$log" | sed 's/check vs fp64 CPU: //')
  tim=$(grep "^softmax:" "$log")
  table+="$tag rows=$rows rc=$rc | $chk | $tim"$'\n'
done < "$DIR/softmax_cluster_list.txt"
echo "== softmax cluster/rows check (cudaEvents; % = cudaMemcpy D2D time / softmax time)"
printf "%s" "$table"
exit $fail
