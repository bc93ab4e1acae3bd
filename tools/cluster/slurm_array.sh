#!/usr/bin/env bash
# slurm_array.sh: a sharded `tune run` as a Slurm job array, one GPU per task, and the merge of its
# shards as a job that starts when every task succeeded (docs/cluster.md).
#
#   tools/cluster/slurm_array.sh N RECIPE [tune run options...]
#
# Submits an array of N tasks (1..N), each `tune_shard.sh run RECIPE --shard I/N` into
# $TUNE_OUT/shard-I-of-N.db, then `tune_shard.sh merge` (afterok) into $TUNE_OUT/merged.db.
# Environment: TUNE_OUT (a folder every node sees; default ./tune-shards), TUNE (the tune binary on
# the nodes; default: tune on PATH), SBATCH_ARGS (more sbatch options: partition, account, time),
# SBATCH (the sbatch command; default sbatch). Prints the two job ids.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: slurm_array.sh N RECIPE [tune run options...]" >&2; exit 2; }
n=$1
shift
case "$n" in ''|*[!0-9]*) echo "slurm_array.sh: N must be a count, got $n" >&2; exit 2 ;; esac
[ "$n" -ge 1 ] || { echo "slurm_array.sh: N must be at least 1" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
out=$(mkdir -p "${TUNE_OUT:-./tune-shards}" && cd "${TUNE_OUT:-./tune-shards}" && pwd)
sbatch=${SBATCH:-sbatch}
common=(--parsable --export="ALL,TUNE_OUT=$out,TUNE_SHARDS=$n,TUNE=${TUNE:-tune}" ${SBATCH_ARGS:-})

# the shards: one task per GPU; a requeued task resumes its shard from its database
array=$("$sbatch" "${common[@]}" --job-name=tune-shards --array="1-$n" --ntasks=1 --gpus-per-task=1 \
  --output="$out/shard-%a-of-$n.log" "$here/tune_shard.sh" run "$@")
array=${array%%;*}
# the merge: only after every task exited 0
merge=$("$sbatch" "${common[@]}" --job-name=tune-merge --dependency="afterok:$array" --ntasks=1 \
  --output="$out/merge.log" "$here/tune_shard.sh" merge)
merge=${merge%%;*}
echo "shards: job $array (array 1-$n), merge: job $merge -> $out/merged.db"
