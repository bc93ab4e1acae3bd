#!/usr/bin/env bash
# On a GPU (sm_90+): thread-block cluster launches end to end. The fixture tests/fixtures/recipes/
# cluster.lua (each CTA reads its cluster neighbour's blockIdx.x through distributed shared memory:
# mapa + ld.shared::cluster between barrier.cluster arrive/wait) is run by `tune run` on the GPU:
# every variant that can launch (CL 2 and 4 on 64 blocks, CL 2 on 6) must be ok (verified exactly
# against a cluster-less reference, then timed), CL 4 on 6 blocks rejected with the reason. Then
# `tune bundle` and libtunert launch the bundled variants (tunert_cluster_gpu), outputs exact.
# Skipped (77) without a GPU. Logs in $OUT when set; the last lines are a short table.
. "$(dirname "$0")/../integration/lib.sh"
RUNNER="${TUNERT_CLUSTER_GPU:?set TUNERT_CLUSTER_GPU to the tunert_cluster_gpu binary}"
FX="$SRC/tests/fixtures/recipes/cluster.lua"
LOG="${OUT:-$WORK}"
mkdir -p "$LOG"
"$TUNE" run "$FX" --device cuda:0 --db c.db --seed 3 --strategy exhaustive >"$LOG/run.txt" 2>&1
rc=$?
skip_without_gpu "$LOG/run.txt"
check "tune run exits 0 (rc $rc)" test $rc -eq 0
sql c.db "select p.name, c.params_json, r.status, r.median_ns, r.error_text from results r join problems p on p.id = r.problem_id
  join configs c on c.id = r.config_id order by p.name, c.params_json" >"$LOG/results.txt"
n_ok=$(grep -c '|ok|' "$LOG/results.txt")
check "6 results ok (CL 2, 4 x THREADS 32, 64 on nb64r2; CL 2 on nb6r1): $n_ok" test "$n_ok" -eq 6
# rejected before compiling: not in nb6r1's space, so not stored; the run says why
check "CL 4 on 6 blocks rejected with the reason" grep -q "rejected 2: launch step 1: cluster {4, 1, 1} does not divide grid {6, 1, 1}" "$LOG/run.txt"
check "no result stored for the rejected configs" test "$(grep -c '|skipped|' "$LOG/results.txt")" -eq 0
"$TUNE" bundle --recipe cluster --db c.db -o c.bundle >"$LOG/bundle.txt" 2>&1
check "bundle written and checked (rc $?)" contains "$LOG/bundle.txt" "checked with libtunert"
"$RUNNER" c.bundle >"$LOG/launch.txt" 2>&1
rc=$?
check "libtunert cluster launches exact (rc $rc)" test $rc -eq 0
echo
echo "== tune run (problem | config | status | median ns | error)"
cat "$LOG/results.txt"
echo "== libtunert"
cat "$LOG/launch.txt"
finish
