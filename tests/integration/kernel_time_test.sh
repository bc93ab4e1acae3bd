#!/usr/bin/env bash
# The kernel-time figure beside the GPU-busy line (tuner/progress.c), on any CPU:
# tests/support/fake_worker.c stands in for the GPU and, with FAKE_KERNEL_PERMILLE, reports a
# made-up kernel time per measure in its replies ("kernel_ns", tuner/protocol.h), as a worker
# with CUPTI does. Checked:
#  - one GPU: "kernels on the GPU: K s (Y % of wall)" follows the busy line; K is the sum the
#    replies reported (every measure: search and selection rounds), Y is K over the wall, and
#    K <= measure + selection rounds (the worker's wall time, which holds the kernels);
#  - two GPUs (backend_pool.c): K sums both workers' replies;
#  - a GPU whose worker crashes: the replies without the figure are counted and said;
#  - a worker that does not report it (an older one, or one without CUPTI): no kernel line
#    at all, not a zero; replay: no busy line and no kernel line.
. "$(dirname "$0")/lib.sh"
export TUNE_WORKER_PROGRAM="${FAKE_WORKER:?set FAKE_WORKER to the stand-in worker}"
R="$SRC/tests/fixtures/recipes/pool.lua"
run() { FAKE_MEASURE_MS=20 "$TUNE" run "$R" --strategy exhaustive --seed 1 "$@"; }

# kernel_figures OUT LOG PERMILLE: the busy line's and the kernel line's figures against the
# measures the fake worker logged (each reported PERMILLE/1000 of its 20 ms)
kernel_figures() { python3 - "$@" <<'PY'
import re, sys
out, log, permille = open(sys.argv[1]).read(), sys.argv[2], int(sys.argv[3])
b = re.search(r"^GPU busy: [0-9.]+ % of ([0-9.]+) s wall \(measure ([0-9.]+) s, selection rounds ([0-9.]+) s.*\n"
              r"  kernels on the GPU: ([0-9.]+) s \(([0-9.]+) % of wall\): the variants' own kernels", out, re.M)
if not b:
    sys.exit("no busy line followed by a kernel line")
wall, measure, select, k, pct = map(float, b.groups())
n = sum(1 for _ in open(log))
want = n * 0.020 * permille / 1000
bad = []
if abs(k - want) > 0.002: bad.append(f"K {k} s, want {want:.4f} s ({n} measures)")
if k > measure + select + 0.05: bad.append(f"K {k} s above measure + selection rounds {measure + select} s")
# Y against K / W, both as printed (W to 0.1 s, K to 1 ms, Y to 0.1 %)
lo, hi = 100 * (k - 5e-4) / (wall + 0.05) - 0.05, 100 * (k + 5e-4) / (wall - 0.05) + 0.05
if not lo <= pct <= hi: bad.append(f"Y {pct} %, want {lo:.2f} to {hi:.2f} % (K / W)")
if not n or k <= 0: bad.append("nothing measured")
if bad: sys.exit("; ".join(bad))
PY
}

FAKE_GPUS=1 FAKE_KERNEL_PERMILLE=400 FAKE_LOG=$PWD/a.log run --device cuda:0 --db a.db >a.txt 2>&1
check "one GPU, kernel time reported: exits 0" test $? -eq 0
check "one GPU: K is the replies' sum, within measure + selection rounds, Y = K / wall" kernel_figures a.txt a.log 400
check "one GPU: every measure reported it (no note)" lacks a.txt "measures reported it"
check "one GPU: K holds the selection rounds' measures too (more measures than the 24 results)" \
  test "$(wc -l <a.log)" -gt "$(sql a.db "select count(*) from results")"

FAKE_GPUS=2 FAKE_KERNEL_PERMILLE=250 FAKE_LOG=$PWD/b.log run --device cuda:all --db b.db >b.txt 2>&1
check "two GPUs: exits 0" test $? -eq 0
check "two GPUs: K sums both workers' replies" kernel_figures b.txt b.log 250

FAKE_GPUS=2 FAKE_KERNEL_PERMILLE=250 FAKE_CRASH_GPU=1 FAKE_LOG=$PWD/c.log run --device cuda:all --db c.db >c.txt 2>&1
check "a crashing GPU: exits 0" test $? -eq 0
check "a crashing GPU: K counts the replies that carried it" kernel_figures c.txt c.log 250
check "a crashing GPU: the measures without the figure are said" python3 - c.txt c.log <<'PY'
import re, sys
m = re.search(r"; ([0-9]+) of ([0-9]+) measures reported it \(crashes", open(sys.argv[1]).read())
n = sum(1 for _ in open(sys.argv[2]))
sys.exit(not (m and int(m.group(1)) == n and int(m.group(2)) > n))
PY

FAKE_GPUS=1 run --device cuda:0 --db d.db >d.txt 2>&1
check "a worker that reports no kernel time: exits 0" test $? -eq 0
check "... the busy line is printed" contains d.txt "^GPU busy: "
check "... and no kernel line, not a zero" lacks d.txt "kernels on the GPU"

"$TUNE" run "$SRC/recipes/softmax.lua" --device "replay:$SRC/data/recorded/softmax.db" --db s.db --budget 4 --seed 1 \
  >s.txt 2>&1
check "replay: exits 0" test $? -eq 0
check "replay: no busy line and no kernel line" sh -c '! grep -q "GPU busy\|kernels on the GPU" s.txt'
finish
