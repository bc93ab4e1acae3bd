#!/usr/bin/env bash
# device_prefill_sm90.sh: one device call (~6 minutes) that checks and tunes the Hopper prefill path
# (templates/attention/prefill_sm90.cuh, recipes/attention/prefill_sm90.lua) on the GPU.
#   usage: tools/bench/device_prefill_sm90.sh OUTDIR
# Environment: TUNE (default build/tune), WIDE=1 (tune the whole space, both PV_SPLIT values: about
# twice as long), TUNE_BUDGET (seconds for tune run, default 200), SKIP_HARNESS=1.
#
# Phases (logs in OUTDIR/logs.tgz; the database, lean, in OUTDIR/prefill_sm90.db):
#  1. build tools/check/prefill_sm90_check.cu for 18 configs with nvcc (sm_90a; 3 of them with the
#     TMA producer, USE_TMA=1 / "TMA1", which the recipe cannot use yet), print ptxas registers and
#     spills per binary;
#  2. correctness on small problems (GQA, S = 256, 1000 (no multiple of any tile), 77 (below one
#     tile)) against the fp32 reference kernel, then cudaEvent timing on the real problems;
#  3. PV_SPLIT choice: 0 unless every PV_SPLIT=0 D=128 binary failed the small checks while a
#     PV_SPLIT=1 one passed (that would say the MN-major leading-byte offset of V is wrong);
#  4. tune run recipes/attention/prefill_sm90.lua on its six problems (PV_SPLIT pinned, causal
#     problems without SCHED=0, unless WIDE=1), with a time budget;
#  5. a table: per problem, the best verified variant, TFLOP/s, and the ratios to the recorded
#     mma.sync path (data/recorded/attention.db) and to the recorded peers
#     (data/peers/attention-h200-2026-11-22.json: FlashAttention-2 and cuDNN via PyTorch SDPA).
set -u
out=${1:?usage: tools/bench/device_prefill_sm90.sh OUTDIR}
cd "$(dirname "$0")/../.."
mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PATH=$PATH:/usr/local/cuda/bin
TUNE=${TUNE:-build/tune}
work=/tmp/pf90
logs=$work/logs
rm -rf "$work"
mkdir -p "$logs" "$work/check"
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
pvs=0

if [ "${SKIP_HARNESS:-0}" != 1 ]; then
  stamp "phase 1: build the check harness (nvcc, sm_90a)"
  if command -v nvcc > /dev/null; then
    OUTDIR=$work/check timeout 150 tools/check/prefill_sm90_build.sh -j 16 > "$logs/harness_build.txt" 2>&1
    echo "harness build rc=$?"
    sed "s|$work/check/||" "$logs/harness_build.txt"
  else
    echo "no nvcc on this machine: harness skipped"
  fi

  stamp "phase 2a: correctness on small problems (B HQ HKV S = 2 4 2 256; 2 4 2 1000; 1 2 1 77)"
  OUTDIR=$work/check PROBLEMS="2 4 2 256;2 4 2 1000;1 2 1 77" timeout 120 tools/check/prefill_sm90_run.sh 3 \
    > "$logs/harness_small.txt" 2>&1
  cut -c1-170 "$logs/harness_small.txt"

  stamp "phase 2b: timing on the real problems (cudaEvent median of 20; flops: causal counts S*S/2)"
  for bin in "$work"/check/prefill_sm90_*; do
    [ -x "$bin" ] || continue
    case $(basename "$bin") in
      *_d128f_*) probs="4 32 32 4096" ;;
      *_d128c_*) probs="4 32 32 4096;8 32 32 2048" ;;
      *_d64f_*|*_d64c_*) probs="16 16 16 1024" ;;
    esac
    IFS=';' read -ra pl <<< "$probs"
    for p in "${pl[@]}"; do
      # shellcheck disable=SC2086
      timeout 60 "$bin" $p 20 >> "$logs/harness_timing.txt" 2>&1 || echo "exit $? $(basename "$bin") $p" >> "$logs/harness_timing.txt"
    done
  done
  cut -c1-200 "$logs/harness_timing.txt"

  # phase 3: the PV_SPLIT choice
  v0_pass=$(grep -E '^PASS .* PS0 .*D128' "$logs/harness_small.txt" | wc -l)
  v1_pass=$(grep -E '^PASS .* PS1 .*D128' "$logs/harness_small.txt" | wc -l)
  if [ "$v0_pass" = 0 ] && [ "$v1_pass" -gt 0 ]; then pvs=1; fi
  stamp "phase 3: PV_SPLIT=$pvs (D128 small-problem passes: PV_SPLIT=0 $v0_pass, PV_SPLIT=1 $v1_pass)"
fi

stamp "phase 4: tune run recipes/attention/prefill_sm90.lua"
# A: the full problems (SCHED only matters when causal); B: the causal ones without SCHED=0 (natural
# order, the known-worst causal schedule of the mma.sync path), so that all six fit the budget.
budget=${TUNE_BUDGET:-200}
budget_a=$((budget * 3 / 10)); budget_b=$((budget - budget_a))
only_a="--only PV_SPLIT=$pvs"; only_b="--only PV_SPLIT=$pvs,SCHED=1 --only PV_SPLIT=$pvs,SCHED=2"
[ "$pvs" = 1 ] && only_a=""   # PV_SPLIT=1 does not apply at D=64
[ "${WIDE:-0}" = 1 ] && only_a="" && only_b=""
# shellcheck disable=SC2086
timeout $((budget_a + 30)) "$TUNE" run recipes/attention/prefill_sm90.lua --db "$work/tune.db" --seed 1 --quiet \
  --problem causal=false --budget "${budget_a}s" $only_a > "$logs/tune_a.txt" 2>&1
rc=$?; echo "tune A (full attention) rc=$rc"; [ $rc = 0 ] || tail -5 "$logs/tune_a.txt"
# shellcheck disable=SC2086
timeout $((budget_b + 30)) "$TUNE" run recipes/attention/prefill_sm90.lua --db "$work/tune.db" --seed 1 --quiet \
  --problem causal=true --budget "${budget_b}s" $only_b > "$logs/tune_b.txt" 2>&1
rc=$?; echo "tune B (causal) rc=$rc"; [ $rc = 0 ] || tail -5 "$logs/tune_b.txt"
cat "$logs/tune_a.txt" "$logs/tune_b.txt" > "$logs/tune.txt"
grep -E "^best for|results|compile:|error|Error" "$logs/tune.txt" | cut -c1-220
python3 tools/lean_db.py "$work/tune.db" "$out/prefill_sm90.db" > "$logs/lean_db.txt" 2>&1 || cat "$logs/lean_db.txt"

stamp "phase 5: summary"
python3 - "$work/tune.db" data/recorded/attention.db data/peers/attention-h200-2026-11-22.json <<'EOF' | tee "$logs/summary.md"
import json, sqlite3, sys
db, rec, peers_path = sys.argv[1:4]

def best(path, recipe):
    c = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    rows = c.execute("""SELECT p.name, p.dims_json, min(r.median_ns), c.params_json FROM results r
        JOIN recipes rc ON rc.id = r.recipe_id JOIN problems p ON p.id = r.problem_id
        JOIN configs c ON c.id = r.config_id WHERE rc.name = ? AND r.status = 'ok'
        GROUP BY p.name""", (recipe,)).fetchall()
    return {r[0]: r for r in rows}, c

try:
    ours, c = best(db, "attention.prefill_sm90")  # RECIPE below
except Exception as e:
    print("no tune database:", e); sys.exit(0)
try:
    old, _ = best(rec, "attention.prefill")
except Exception:
    old = {}
peers = json.load(open(peers_path)).get("prefill", {})
alias = {"b4h32s4096d128c_gqa8": "b4h32kv8s4096d128c"}
status = {}
RECIPE = "attention.prefill_sm90"
for name, st, n in c.execute("""SELECT p.name, r.status, count(*) FROM results r JOIN problems p ON p.id = r.problem_id
                                 JOIN recipes rc ON rc.id = r.recipe_id WHERE rc.name = ?
                                 GROUP BY p.name, r.status""", (RECIPE,)):
    status.setdefault(name, {})[st] = n

def tflops(d, ns):
    return 4.0 * d["B"] * d["HQ"] * d["S"] * d["S"] * d["D"] * (0.5 if d["causal"] else 1.0) / ns / 1e3

print("| problem | sm90 best | TFLOP/s | vs mma.sync path (recorded) | vs FA2 | vs cuDNN | statuses | config |")
print("|---|---|---|---|---|---|---|---|")
names = sorted(set(status) | set(ours))
for name in names:
    st = ", ".join(f"{k} {v}" for k, v in sorted(status.get(name, {}).items()))
    if name not in ours:
        print(f"| {name} | - | - | - | - | - | {st} | no verified variant |")
        continue
    _, dj, ns, params = ours[name]
    d = json.loads(dj)
    t = tflops(d, ns)
    o = old.get(name)
    vs_old = f"{t / tflops(d, o[2]):.2f}x ({tflops(d, o[2]):.0f})" if o else "-"
    pe = peers.get(name) or peers.get(alias.get(name, ""), {})
    f = pe.get("flash", {}).get("tflops")
    cd = pe.get("cudnn", {}).get("tflops")
    vf = f"{t / f:.2f}x ({f:.0f})" if f else "-"
    vc = f"{t / cd:.2f}x ({cd:.0f})" if cd else "-"
    print(f"| {name} | {ns / 1e3:.1f} us | {t:.1f} | {vs_old} | {vf} | {vc} | {st} | `{params}` |")

# why variants failed (first distinct error texts), so that a broken path is visible at once
errs = c.execute("""SELECT r.status, substr(r.error_text, 1, 160), count(*) FROM results r
                    WHERE r.status NOT IN ('ok', 'skipped') GROUP BY 1, 2 ORDER BY 3 DESC LIMIT 8""").fetchall()
if errs:
    print("\nnon-ok results (status, error, count):")
    for e in errs:
        print(" ", e)
# the best few per problem, to see which knobs matter
print("\ntop 3 per problem (TFLOP/s, config):")
for name in names:
    rows = c.execute("""SELECT p.dims_json, r.median_ns, c.params_json FROM results r JOIN problems p ON p.id = r.problem_id
                        JOIN configs c ON c.id = r.config_id JOIN recipes rc ON rc.id = r.recipe_id
                        WHERE p.name = ? AND rc.name = ? AND r.status = 'ok'
                        ORDER BY r.median_ns LIMIT 3""", (name, RECIPE)).fetchall()
    for dj, ns, params in rows:
        print(f"  {name:24s} {tflops(json.loads(dj), ns):7.1f}  {params}")
print("\n(peers and the mma.sync path were recorded on an H200 on 2026-11-22, not in this run)")
EOF
tar czf "$out/logs.tgz" -C "$work" logs
stamp "done; OUTDIR holds prefill_sm90.db (lean) and logs.tgz"
