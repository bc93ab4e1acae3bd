#!/usr/bin/env bash
# device_softmax_cluster.sh: one device call for the softmax CLUSTER / ROWS / X_HINT variants.
#   1. the standalone check (tools/check/softmax_cluster_check.cu): correctness against a CPU fp64
#      reference and cudaEvent times against cudaMemcpy D2D, for the cluster kernels even where tune's
#      engine does not launch clusters yet. Uses build/check/softmax_cluster_* when carried (built
#      here by DIR=build/check tools/check/softmax_cluster_build.sh), else builds them with nvcc if
#      the machine has it, else says so and goes on.
#   2. records recipes/softmax.lua (softmax and softmax.split, every config: --strategy exhaustive)
#      into a fresh database, then prints per problem the best of the whole space, of the space
#      before these knobs (CLUSTER 1, ROWS 1, X_HINT 0), of each new knob, and % of the copy bandwidth
#      tune measured at the start of the run; and the statuses of the new variants (cluster variants
#      are `wrong` while the engine ignores the launch step's `cluster` field: they then write nothing).
# usage: tools/bench/device_softmax_cluster.sh OUTDIR   (expects build/tune; ~4-5 minutes on an H200)
# OUTDIR gets softmax.db (lean: no compile cache), softmax.log, check/*.log.
set -u
out=${1:?OUTDIR}
cd "$(dirname "$0")/../.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p "$out/check" /tmp/rec

# 1. standalone check (~30 s)
chk_dir=build/check
if [ ! -f "$chk_dir/softmax_cluster_list.txt" ]; then
  if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
    chk_dir=/tmp/smcheck
    NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc) DIR=$chk_dir timeout 240 tools/check/softmax_cluster_build.sh \
      > "$out/check/build.log" 2>&1 || echo "check build failed (see check/build.log)"
  fi
fi
if [ -f "$chk_dir/softmax_cluster_list.txt" ]; then
  DIR=$chk_dir timeout 75 tools/check/softmax_cluster_run.sh "$out/check" 50 > "$out/check/table.txt" 2>&1
  echo "check rc=$?"
else
  echo "check skipped: no build/check/softmax_cluster_* binaries and no nvcc here" | tee "$out/check/table.txt"
fi

# 2. recording (~3-4 minutes)
rm -f /tmp/rec/softmax.db /tmp/rec/softmax.db-wal /tmp/rec/softmax.db-shm
timeout 290 build/tune run recipes/softmax.lua --db /tmp/rec/softmax.db --strategy exhaustive --seed 1 --quiet \
  > "$out/softmax.log" 2>&1
echo "softmax rc=$?"
python3 tools/lean_db.py /tmp/rec/softmax.db "$out/softmax.db" || exit 1
grep -E "^(softmax|compile|GPU busy|device limits)" "$out/softmax.log"
python3 - "$out/softmax.db" <<'PY'
import json, sqlite3, sys
c = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
copy = c.execute("SELECT value FROM peaks WHERE kind = 'copy_GBps' ORDER BY id DESC LIMIT 1").fetchone()
copy = copy[0] if copy else float("nan")
rows = c.execute("""SELECT rc.name, p.name, p.dims_json, cf.params_json, r.status, r.median_ns FROM results r
                    JOIN configs cf ON cf.id = r.config_id JOIN problems p ON p.id = r.problem_id
                    JOIN recipes rc ON rc.id = r.recipe_id""").fetchall()
def group(d):
    if d.get("CLUSTER", 1) > 1: return "cluster"
    if d.get("ROWS", 1) > 1: return "rows"
    if d.get("X_HINT", 0) == 1: return "x_hint"
    return "old"
best, status, bytes_ = {}, {}, {}
for rec, prob, dims, pj, st, ns in rows:
    d = json.loads(pj)
    g = group(d)
    if g != "old" and st != "skipped":
        status.setdefault(g, {}).setdefault(st, 0)
        status[g][st] += 1
    if st != "ok":
        continue
    dm = json.loads(dims)
    bytes_[prob] = 4 * dm["rows"] * dm["cols"]
    for key in ((rec, prob, "all"), (rec, prob, g)):
        if key not in best or ns < best[key][0]:
            best[key] = (ns, pj)
print(f"copy bandwidth measured in this run: {copy:.0f} GB/s (92 % = {0.92 * copy:.0f} GB/s)")
print("statuses of the new variants (run, not skipped):", json.dumps(status))
print("| recipe | problem | best | GB/s | % of copy | old space | cluster | rows | x_hint | best config |")
print("|---|---|---|---|---|---|---|---|---|---|")
def cell(rec, prob, g):
    v = best.get((rec, prob, g))
    return f"{v[0] / 1e3:.2f} us ({100 * bytes_[prob] / v[0] / copy:.0f}%)" if v else "-"
for (rec, prob, g), (ns, pj) in sorted(best.items()):
    if g != "all":
        continue
    gbs = bytes_[prob] / ns
    print(f"| {rec} | {prob} | {ns / 1e3:.2f} us | {gbs:.0f} | {100 * gbs / copy:.1f}% | {cell(rec, prob, 'old')} | "
          f"{cell(rec, prob, 'cluster')} | {cell(rec, prob, 'rows')} | {cell(rec, prob, 'x_hint')} | {pj} |")
PY
echo "== standalone check"
cat "$out/check/table.txt"
