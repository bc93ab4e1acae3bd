#!/usr/bin/env bash
# temporary: fp8 block-mode promotion (precomputed factors, scales one block ahead) vs HEAD's, alternating
set -u
OUT=${OUT:?}
cd build/lib && ln -sf libtunert.so.0.5.0 libtunert.so.0 2>/dev/null; cd ../..
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv > $OUT/gpu.txt 2>&1
cat $OUT/gpu.txt
old=/tmp/oldroot; rm -rf $old; mkdir -p $old; cp -r templates recipes .tune-root $old/
cp tools/bench/.old/fp8_sm90.cuh $old/templates/gemm/fp8_sm90.cuh; cp tools/bench/.old/fp8.lua $old/recipes/gemm/fp8.lua
args=()
for s in m4096n4096k7168 m4096n14336k4096 m8192n18432k7168 m4096n4096k14336; do args+=(--problem ${s}_block); done
for rep in 1 2; do
  echo "== $(date -u +%T) old $rep"
  timeout -s INT 200 build/tune run $old/recipes/gemm/fp8.lua --root $old --db $OUT/old$rep.db --seed $rep --quiet --only FAST_ACCUM=0 "${args[@]}" > $OUT/old$rep.log 2>&1; echo "exit $?"
  echo "== $(date -u +%T) new $rep"
  timeout -s INT 200 build/tune run recipes/gemm/fp8.lua --db $OUT/new$rep.db --seed $rep --quiet --only FAST_ACCUM=0 "${args[@]}" \
    $([ $rep = 1 ] && echo --problem m1000n1040k1072_block --problem m37n4112k4160_block --problem m16n14336k4096_block) > $OUT/new$rep.log 2>&1; echo "exit $?"
done
grep -hE "results|GPU busy" $OUT/old1.log $OUT/new1.log
python3 - $OUT <<'PY'
import sqlite3, sys, json, glob, os
best = {}
bad = []
for db in sorted(glob.glob(sys.argv[1] + "/*.db")):
    tag = os.path.basename(db)[:3]
    c = sqlite3.connect(db)
    for p, params, st, ns, err in c.execute("""select p.name, cf.params_json, r.status, r.median_ns, r.error_text from results r
        join problems p on p.id=r.problem_id join configs cf on cf.id=r.config_id join recipes rc on rc.id=r.recipe_id
        where rc.name='gemm.fp8' and cf.origin not like 'peer:%'"""):
        cfg = json.loads(params)
        if st != 'ok': bad.append((db, p, st, params, (err or '')[:80])); continue
        k = (p, tag, cfg.get('SCALE_LOAD', 0))
        if k not in best or ns < best[k][0]: best[k] = (ns, cfg)
print("not ok:", len(bad)); [print(" ", b) for b in bad[:10]]
print("| problem | old us | new pp0 us | new pp1 us | old/new(pp0) | best new config |")
print("| --- | --- | --- | --- | --- | --- |")
for p in sorted({k[0] for k in best}):
    o = best.get((p, 'old', 0)); n0 = best.get((p, 'new', 0)); n1 = best.get((p, 'new', 1))
    f = lambda x: f"{x[0]/1e3:.2f}" if x else "-"
    nb = min([x for x in (n0, n1) if x], key=lambda x: x[0]) if (n0 or n1) else None
    print(f"| {p} | {f(o)} | {f(n0)} | {f(n1)} | {o[0]/n0[0] if o and n0 else float('nan'):.3f} | {json.dumps(nb[1]) if nb else ''} |")
PY
echo "== $(date -u +%T) compare"
timeout -s INT 200 build/tune compare recipes/gemm/fp8.lua --db $OUT/new2.db --rounds 3 --top-k 2 --timing burst \
  -o $OUT/compare.md --problem m4096n4096k7168_block --problem m8192n18432k7168_block > $OUT/compare.log 2>&1
echo "exit $?"
grep -E "^\| m" $OUT/compare.md
tar czf $OUT/logs.tgz -C $OUT old1.log old2.log new1.log new2.log compare.log; rm -f $OUT/*.log
