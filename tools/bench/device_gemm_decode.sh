#!/usr/bin/env bash
# device_gemm_decode.sh OUTDIR: one device call (about 4-5 minutes on an H200) for the decode shapes of
# issue 5 with the streaming path recipes/gemm/skinny.lua (templates/gemm/skinny.cuh):
#   1. (no peers here: tools/bench/device_compare.sh gemm times cuBLAS by the same protocol)
#   2. tune run recipes/gemm/skinny.lua, exhaustive, seed 1, under a time limit (results are stored as
#      they come, so a cut run still reports what it measured), after a smoke run of a few variants
#      that stops the call early when none of them verifies
#   3. OUTDIR/skinny.db (lean_db.py; as data/recorded/gemm.skinny.db it is what `tune run
#      recipes/gemm/skinny.lua` replays), OUTDIR/logs.tgz (peers, tune log, full report), and last a
#      short table: problem, tuned us, cuBLAS us, cuBLAS / tuned, tuned GB/s, the best config, its
#      registers and spills, verified / evaluated variants, and the recorded best of recipes/gemm.lua
#      (data/recorded/gemm.db, an earlier call: context only, not a same-call comparison; shown only
#      when that recording is of the same GPU model)
# env: TUNE (default build/tune), TUNE_LIMIT_S (tune run limit, default 240)
# usage (device): export LD_LIBRARY_PATH=/usr/local/cuda/lib64; tools/bench/device_gemm_decode.sh $OUT
set -u
out=${1:?usage: device_gemm_decode.sh OUTDIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/../.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PATH=$PATH:/usr/local/cuda/bin
TUNE=${TUNE:-build/tune}
logs=/tmp/gemm_decode_logs
db=/tmp/gemm.skinny.db
rm -rf "$logs" "$db" "$db-wal" "$db-shm"
mkdir -p "$logs"
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a "$logs/status.txt"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv > "$logs/gpu.txt" 2>&1

# Peers are not timed here: `tune compare` (tools/bench/device_compare.sh) times them with the
# same CUPTI protocol as tune, in interleaved rounds (docs/measurement.md).

# smoke: the M = 16 problems with 128-wide slices first (a few variants per layout, in the same database,
# so the full run resumes them); if none verifies, the full run is skipped (a hang would cost the
# watchdog's --timeout per variant)
stamp "smoke: tune run, M = 16, BLOCK_K = 128"
timeout 100 "$TUNE" run recipes/gemm/skinny.lua --db "$db" --seed 1 --strategy exhaustive --timeout 5000 \
  --problem m16n8192k8192_row --problem m16n8192k8192_col --only BLOCK_K=128 > "$logs/smoke.log" 2>&1
stamp "smoke rc=$?"
n_ok=$(python3 -c 'import sqlite3, sys
print(sqlite3.connect(sys.argv[1]).execute("SELECT count(*) FROM results WHERE status = ?", ("ok",)).fetchone()[0])' "$db" 2>/dev/null || echo 0)
stamp "smoke: $n_ok verified variants"
if [ "${n_ok:-0}" -gt 0 ]; then
  stamp "tune run recipes/gemm/skinny.lua (limit ${TUNE_LIMIT_S:-240} s)"
  timeout "${TUNE_LIMIT_S:-240}" "$TUNE" run recipes/gemm/skinny.lua --db "$db" --seed 1 --strategy exhaustive \
    --timeout 5000 --quiet > "$logs/tune.log" 2>&1
  stamp "tune rc=$? (124: time limit; results so far are kept)"
else
  stamp "no variant verified in the smoke run: full run skipped; smoke.log follows"
  grep -v " skipped " "$logs/smoke.log" | tail -25
fi
python3 tools/bench/gemm_report.py "$db" "$logs/gemm_peers.json" > "$logs/report.md" 2>&1
python3 - "$db" "$logs/gemm_peers.json" > "$logs/table.txt" 2>&1 <<'EOF'
import json, os, sqlite3, sys
db, peers_path = sys.argv[1], sys.argv[2]
peers = json.load(open(peers_path)) if os.path.exists(peers_path) else {}
c = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
best, counts = {}, {}
for name, dims, ns, params, regs, spills in c.execute(
        """SELECT p.name, p.dims_json, r.median_ns, cf.params_json, b.registers, b.spill_stores + b.spill_loads
           FROM results r JOIN problems p ON p.id = r.problem_id JOIN configs cf ON cf.id = r.config_id
           LEFT JOIN binaries b ON b.key = r.binary_key WHERE r.status = 'ok' ORDER BY r.median_ns"""):
    best.setdefault(name, (json.loads(dims), ns, json.loads(params), regs, spills))
for name, status, n in c.execute("""SELECT p.name, r.status, count(*) FROM results r JOIN problems p ON p.id = r.problem_id
                                    WHERE r.status != 'skipped' GROUP BY p.name, r.status"""):
    counts.setdefault(name, {})[status] = n
rec = {}
if os.path.exists("data/recorded/gemm.db"):
    r = sqlite3.connect("file:data/recorded/gemm.db?mode=ro", uri=True)
    here = {n for (n,) in c.execute("SELECT name FROM devices")}
    there = {n for (n,) in r.execute("SELECT name FROM devices")}
    if here == there:  # figures of another GPU model never stand beside this one's
        for name, ns in r.execute("""SELECT p.name, min(x.median_ns) FROM results x JOIN problems p ON p.id = x.problem_id
                                     WHERE x.status = 'ok' GROUP BY p.name"""):
            rec[name] = ns / 1e3
    else:
        print(f"rec us: not shown, data/recorded/gemm.db was measured on {', '.join(sorted(there))}, "
              f"this run on {', '.join(sorted(here))}")
bad = {}
for per in counts.values():
    for s, n in per.items():
        if s != "ok": bad[s] = bad.get(s, 0) + n
print("non-ok results (all problems):", bad if bad else "none")
print(f"{'problem':22s} {'tuned us':>9s} {'cuBLAS us':>9s} {'ratio':>6s} {'GB/s':>6s} {'ok/eval':>8s} {'regs':>4s} {'spill':>5s} {'rec us':>7s}  best config (BLOCK_N BLOCK_K STAGES WARPS_N WARPS_K SPLIT_K)")
met = rows = 0
for name in list(peers) + sorted(n for n in best if n not in peers):
    per = counts.get(name, {})
    ev = f"{per.get('ok', 0)}/{sum(per.values())}"
    peer = peers.get(name, {}).get("us", float("nan"))
    if name not in best:
        print(f"{name:22s} {'-':>9s} {peer:9.1f} {'-':>6s} {'-':>6s} {ev:>8s}")
        continue
    d, ns, p, regs, spills = best[name]
    us = ns / 1e3
    gbs = 2.0 * (d["M"] * d["K"] + d["K"] * d["N"] + d["M"] * d["N"]) / ns
    ratio = peer / us
    rows += 1
    met += ratio >= 1.25
    cfg = " ".join(str(p[k]) for k in ("BLOCK_N", "BLOCK_K", "STAGES", "WARPS_N", "WARPS_K", "SPLIT_K"))
    print(f"{name:22s} {us:9.1f} {peer:9.1f} {ratio:5.2f}x {gbs:6.0f} {ev:>8s} {regs if regs is not None else -1:4d} "
          f"{spills if spills is not None else -1:5d} {rec.get(name, float('nan')):7.1f}  {cfg}")
print(f"{met} of {rows} problems at >= 1.25x cuBLAS (ratio = cuBLAS us / tuned us, same call)")
EOF
python3 tools/lean_db.py "$db" "$out/skinny.db" >> "$logs/status.txt" 2>&1
tar czf "$out/logs.tgz" -C /tmp gemm_decode_logs
stamp "done"
echo "== status"; cat "$logs/status.txt"; tail -3 "$logs/tune.log" 2>/dev/null
echo "== gemm.skinny vs cuBLAS (same call)"; cat "$logs/table.txt"
