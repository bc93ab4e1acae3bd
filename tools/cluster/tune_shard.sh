#!/usr/bin/env bash
# tune_shard.sh: one shard of a sharded `tune run`, or the merge of all shards, as a task of a Slurm
# job array or a Kubernetes Indexed Job (docs/cluster.md).
#
#   tune_shard.sh run RECIPE [tune run options...]  this task's shard into $TUNE_OUT/shard-I-of-N.db
#   tune_shard.sh merge [tune db merge options...]  every shard into $TUNE_OUT/merged.db
#
# The shard I/N comes from the scheduler:
#   Slurm       I = SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN + 1, N = SLURM_ARRAY_TASK_COUNT
#   Kubernetes  I = JOB_COMPLETION_INDEX + 1, N = TUNE_SHARDS (the Job's completions)
#   TUNE_SHARD=I/N, when set, wins over both.
# Environment: TUNE (the tune binary; default: tune on PATH), TUNE_OUT (the shared folder of the
# databases; default .), TUNE_SHARDS (N; merge needs it unless Slurm's SLURM_ARRAY_TASK_COUNT is
# set), TUNE_MERGE_WAIT_S (merge: wait this long for every shard's .done marker; default 0).
# A task that runs again (a requeue) resumes its shard from its database. A shard's database is
# marked done (shard-I-of-N.done) when its run exits 0; merge refuses while a shard is not done.
set -euo pipefail

TUNE="${TUNE:-tune}"
OUT="${TUNE_OUT:-.}"

die() { echo "tune_shard.sh: $*" >&2; exit 2; }

# The shard count N from the scheduler's variables.
shard_count() {
  if [ -n "${TUNE_SHARD:-}" ]; then echo "${TUNE_SHARD#*/}"
  elif [ -n "${TUNE_SHARDS:-}" ]; then echo "$TUNE_SHARDS"
  elif [ -n "${SLURM_ARRAY_TASK_COUNT:-}" ]; then echo "$SLURM_ARRAY_TASK_COUNT"
  else die "no shard count: set TUNE_SHARDS (Kubernetes: the Job's completions) or run in a Slurm array"; fi
}

# This task's shard I/N.
shard_of_task() {
  local n i
  if [ -n "${TUNE_SHARD:-}" ]; then echo "$TUNE_SHARD"; return; fi
  n=$(shard_count)
  if [ -n "${SLURM_ARRAY_TASK_ID:-}" ]; then i=$((SLURM_ARRAY_TASK_ID - ${SLURM_ARRAY_TASK_MIN:-1} + 1))
  elif [ -n "${JOB_COMPLETION_INDEX:-}" ]; then i=$((JOB_COMPLETION_INDEX + 1))
  else die "no task index: SLURM_ARRAY_TASK_ID or JOB_COMPLETION_INDEX (or TUNE_SHARD=I/N)"; fi
  [ "$i" -ge 1 ] && [ "$i" -le "$n" ] || die "task index gives shard $i of $n: the array's size and N disagree"
  echo "$i/$n"
}

run_shard() {
  [ $# -ge 1 ] || die "run: which recipe?"
  local shard i n db
  shard=$(shard_of_task)
  i=${shard%/*}
  n=${shard#*/}
  db="$OUT/shard-$i-of-$n.db"
  mkdir -p "$OUT"
  rm -f "$OUT/shard-$i-of-$n.done"
  echo "tune_shard.sh: shard $shard on $(hostname) into $db"
  "$TUNE" run "$@" --shard "$shard" --db "$db"
  touch "$OUT/shard-$i-of-$n.done"
}

merge_shards() {
  local n i waited=0 missing
  n=$(shard_count)
  while :; do
    missing=""
    for i in $(seq 1 "$n"); do [ -e "$OUT/shard-$i-of-$n.done" ] || missing="$missing $i"; done
    [ -z "$missing" ] && break
    [ "$waited" -lt "${TUNE_MERGE_WAIT_S:-0}" ] || die "merge: shard(s)$missing of $n not done in $OUT"
    sleep 10
    waited=$((waited + 10))
  done
  local inputs=()
  for i in $(seq 1 "$n"); do inputs+=("$OUT/shard-$i-of-$n.db"); done
  "$TUNE" db merge "$@" "$OUT/merged.db" "${inputs[@]}"
}

case "${1:-}" in
  run) shift; run_shard "$@" ;;
  merge) shift; merge_shards "$@" ;;
  *) die "usage: tune_shard.sh run RECIPE [tune run options...] | tune_shard.sh merge [tune db merge options...]" ;;
esac
