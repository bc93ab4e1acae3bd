#!/usr/bin/env bash
# device_softmax_new.sh: one device call (~3-4 minutes on an H200) for issue #4's softmax goal:
#   1. smoke test: a few softmax.stream variants (templates/softmax/stream.cuh: all three modes, both
#      store forms, one and two blocks per SM) on its three problems, verified against the reference;
#      stops (exit 1) if any is wrong or fails, leaving smoke.db and logs.tgz in OUTDIR; the same
#      on recipes/softmax/stream_tail.lua (row counts with a partial last group, fewer groups than SMs)
#   2. re-records recipes/softmax.lua (softmax, softmax.split) and recipes/softmax/stream.lua
#      (softmax.stream) exhaustively (CUPTI timing, memset L2 flush, tune's copy bandwidth measured at
#      the start of each recipe's run), each into its own database: softmax.db is what
#      data/recorded/softmax.db replays, softmax.stream.db what data/recorded/softmax.stream.db would
#      (the name tune's default replay looks for, for a sub-recipe recorded on its own)
#   3. (no peers here: tools/bench/device_compare.sh memory times PyTorch by the same protocol)
#   4. writes OUTDIR/softmax.db, softmax.stream.db (lean), memory_peers.json, logs.tgz, table.md and
#      prints the table
# usage: export LD_LIBRARY_PATH=/usr/local/cuda/lib64; tools/bench/device_softmax_new.sh OUTDIR
# (expects build/tune built from the committed tree)
set -u
out=${1:?OUTDIR}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
logs=/tmp/logs_softmax_new
mkdir -p "$out" /tmp/rec "$logs"
rm -f /tmp/rec/smoke.db* /tmp/rec/softmax.db* /tmp/rec/softmax.stream.db*

# --- 1. smoke test of the new variants -----------------------------------------------------------
# (--timeout: a variant that hangs on its barriers is stopped after 5 s, not 30 s)
smoke_only="--only MODE=0,BLOCK=256,SROWS=16 --only MODE=2,BLOCK=256,SROWS=16 --only MODE=1,BLOCK=512,SROWS=1"
timeout 60 build/tune run recipes/softmax/stream.lua --db /tmp/rec/smoke.db --device cuda:0 --strategy exhaustive \
  --seed 1 --quiet --timeout 5000 $smoke_only > "$logs/smoke.log" 2>&1
rc1=$?
# partial last groups and fewer groups than streams (recipes/softmax/stream_tail.lua)
timeout 60 build/tune run recipes/softmax/stream_tail.lua --db /tmp/rec/smoke.db --device cuda:0 --strategy exhaustive \
  --seed 1 --quiet --timeout 5000 $smoke_only --only MODE=1,BLOCK=256,SROWS=2 > "$logs/smoke_tail.log" 2>&1
rc2=$?
echo "smoke rc=$rc1 tail rc=$rc2"
if ! python3 - /tmp/rec/smoke.db $rc1 $rc2 <<'EOF'; then
import sqlite3, sys
c = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
rows = c.execute("""SELECT rc.name, p.name, cf.params_json, r.status, r.median_ns, r.err_max_abs, r.error_text
                    FROM results r JOIN configs cf ON cf.id = r.config_id JOIN problems p ON p.id = r.problem_id
                    JOIN recipes rc ON rc.id = r.recipe_id WHERE r.status != 'skipped'""").fetchall()
want = {("softmax.stream", p) for p in ("r16384c1024", "r4096c8192", "r1024c32768")} | \
       {("softmax.stream_tail", p) for p in ("r999c1024", "r251c8192", "r100c32768")}
seen = {(r[0], r[1]) for r in rows}
bad = [r for r in rows if r[3] not in ("ok", "suspicious")]
for r in bad:
    print("  BAD", *r[:4], r[5], (r[6] or "")[:160])
print(f"smoke: {len(rows)} variants run, {len(bad)} wrong or failed; missing: {sorted(want - seen) or 'none'}")
sys.exit(1 if bad or want - seen or sys.argv[2] != "0" or sys.argv[3] != "0" else 0)
EOF
  python3 tools/lean_db.py /tmp/rec/smoke.db "$out/smoke.db"
  tail -n 30 "$logs/smoke.log" "$logs/smoke_tail.log"
  tar czf "$out/logs.tgz" -C /tmp "$(basename "$logs")"
  echo "STOPPED: softmax.stream smoke test failed (no re-recording)"
  exit 1
fi

# --- 2. exhaustive re-recording ------------------------------------------------------------------
timeout 170 build/tune run recipes/softmax.lua --db /tmp/rec/softmax.db --device cuda:0 --strategy exhaustive --seed 1 --quiet \
  > "$logs/softmax.log" 2>&1
echo "softmax rc=$?"
timeout 100 build/tune run recipes/softmax/stream.lua --db /tmp/rec/softmax.stream.db --device cuda:0 --strategy exhaustive --seed 1 --quiet --timeout 5000 \
  > "$logs/stream.log" 2>&1
echo "softmax.stream rc=$?"
python3 tools/lean_db.py /tmp/rec/softmax.db "$out/softmax.db" || exit 1
python3 tools/lean_db.py /tmp/rec/softmax.stream.db "$out/softmax.stream.db" || exit 1

# --- 3. PyTorch peers ----------------------------------------------------------------------------
# Peers are not timed here: `tune compare` (tools/bench/device_compare.sh) times them with the
# same CUPTI protocol as tune, in interleaved rounds (docs/measurement.md).

tar czf "$out/logs.tgz" -C /tmp "$(basename "$logs")"
grep -hE "^(softmax|compile|GPU busy|device limits)" "$logs/softmax.log" "$logs/stream.log"

# --- 4. table ------------------------------------------------------------------------------------
python3 - "$out/memory_peers.json" "$out/softmax.db" "$out/softmax.stream.db" > "$out/table.md" <<'EOF'
import json, sqlite3, sys
try:
    peers = json.load(open(sys.argv[1])).get("softmax", {})
except (OSError, ValueError):
    peers = {}
best = {}  # problem -> recipe -> (ns, params)
dims = {}
peaks = []
for db in sys.argv[2:]:
    c = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    peaks += [v for k, v in c.execute("SELECT kind, value FROM peaks") if k == "copy_GBps"]
    status = c.execute("""SELECT rc.name, r.status, count(*) FROM results r JOIN recipes rc ON rc.id = r.recipe_id
                          GROUP BY rc.name, r.status""").fetchall()
    print(f"{db}: results by status: {status}")
    rows = c.execute("""SELECT p.name, p.dims_json, rc.name, cf.params_json, r.median_ns FROM results r
                        JOIN configs cf ON cf.id = r.config_id JOIN problems p ON p.id = r.problem_id
                        JOIN recipes rc ON rc.id = r.recipe_id WHERE r.status = 'ok' ORDER BY p.id""").fetchall()
    for prob, dj, recipe, pj, ns in rows:
        dims[prob] = json.loads(dj)
        b = best.setdefault(prob, {})
        if recipe not in b or ns < b[recipe][0]:
            b[recipe] = (ns, pj)
peak = max(peaks) if peaks else 0  # the highest copy bandwidth tune measured in this call
print(f"tune copy bandwidth (this call): {', '.join(f'{p:.0f}' for p in peaks)} GB/s; % of copy against "
      f"{peak:.0f}; goal: 92%")
print("| problem | best us | GB/s | % of copy | vs PyTorch | softmax us | split us | stream us | best config |")
print("|---|---|---|---|---|---|---|---|---|")
for prob, b in best.items():
    d = dims[prob]
    nbytes = 4 * d["rows"] * d["cols"]  # bf16 x read once, y written once (recipe metrics.bytes)
    recipe, (ns, pj) = min(b.items(), key=lambda kv: kv[1][0])
    gbps = nbytes / ns
    pct = f"{100 * gbps / peak:.1f}%" if peak else "-"
    peer = peers.get(prob, {})
    vs = f"{peer['us'] * 1e3 / ns:.2f}x" if "us" in peer else "-"
    per = [f"{b[r][0] / 1e3:.2f}" if r in b else "-" for r in ("softmax", "softmax.split", "softmax.stream")]
    print(f"| {prob} | {ns / 1e3:.2f} | {gbps:.0f} | {pct} | {vs} | {' | '.join(per)} | {recipe} {pj} |")
EOF
echo "files: $(ls "$out" | tr '\n' ' ')"
cat "$out/table.md"
