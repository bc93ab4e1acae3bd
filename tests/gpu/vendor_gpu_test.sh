#!/usr/bin/env bash
# On a GPU: cuBLASLt vendor entries launched by libtunert (runtime/tunert_vendor_cublaslt.c), c
# checked against a host fp64 reference (tunert_vendor_gpu). The bundle is made here from the
# recorded H100 comparison (data/compare/h100-2026-11-26-all/gemm.db): its vendor entries of family
# gemm (cuBLAS faster: b col and row), plus vendor entries for shapes no tile divides, both layouts,
# written into a copy of it from the family's fallback entries (a synthetic edit of the bundle, not
# a measurement). Needs libcublasLt on the library path (LD_LIBRARY_PATH=/usr/local/cuda/lib64).
# Skipped (77) without a GPU. Logs in $OUT when set.
. "$(dirname "$0")/../integration/lib.sh"
RUNNER="${TUNERT_VENDOR_GPU:?set TUNERT_VENDOR_GPU to the tunert_vendor_gpu binary}"
LOG="${OUT:-$WORK}"
mkdir -p "$LOG"
"$RUNNER" /dev/null gemm 1,8,8,col >"$LOG/probe.txt" 2>&1
if [ $? -eq 77 ]; then cat "$LOG/probe.txt"; exit 77; fi
cp "$SRC/data/compare/h100-2026-11-26-all/gemm.db" g.db
"$TUNE" bundle --recipe gemm --db g.db -o v.bundle --arch sm_90a --no-ptx --allow-source-change >"$LOG/bundle.txt" 2>&1
check "bundle written (rc $?)" contains "$LOG/bundle.txt" "checked with libtunert"
check "cuBLAS won some problems of gemm" contains "$LOG/bundle.txt" "vendor entry: cublaslt"
# synthetic vendor entries: the fallback entry of the layout, at other dims (the domain: N, K multiples of 8)
SHAPES="37,200,72,row 37,200,72,col 5,8,8,col 129,1000,264,row 1,4104,1056,col 300,136,1032,row"
python3 - v.bundle $SHAPES <<'PY'
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
cols = [r[1] for r in db.execute("pragma table_info(entries)") if r[1] != "id"]
for shape in sys.argv[2:]:
    M, N, K, lay = shape.split(",")
    M, N, K = int(M), int(N), int(K)
    src = db.execute("""select e.id from entries e join families f on f.id = e.family_id where f.name = 'gemm'
                        and e.kind = 'fallback' and e.problem_name like ?""", ("%_" + lay,)).fetchone()[0]
    row = dict(zip(cols, db.execute("select %s from entries where id = ?" % ",".join(cols), (src,)).fetchone()))
    name = "m%dn%dk%d_%s" % (M, N, K, lay)
    row.update(problem_name=name, problem_hash="synthetic-" + name, dims="%d, %d, %d, %d" % (K, M, N, lay == "row"),
               dims_json=json.dumps({"K": K, "M": M, "N": N, "b_layout": lay}, separators=(",", ":"), sort_keys=True),
               kind="vendor", vendor="cublaslt", vendor_ns=1.0)
    new = db.execute("insert into entries(%s) values (%s)" % (",".join(cols), ",".join("?" * len(cols))), [row[c] for c in cols]).lastrowid
    for t in ("launches", "entry_args", "entry_tensormaps"):
        tc = [r[1] for r in db.execute("pragma table_info(%s)" % t) if r[1] != "entry_id"]
        db.execute("insert into %s(entry_id, %s) select ?, %s from %s where entry_id = ?" % (t, ",".join(tc), ",".join(tc), t), (new, src))
db.commit()
PY
check "synthetic entries added (rc $?)" test "$(sql v.bundle "SELECT count(*) FROM entries WHERE problem_hash LIKE 'synthetic-%'")" -eq 6
"$RUNNER" v.bundle gemm 128,8192,8192,col 64,4096,14336,col 1,8192,8192,row 4096,4096,4096,col $SHAPES >"$LOG/launch.txt" 2>&1
rc=$?
check "cuBLASLt vendor entries match the fp64 reference (rc $rc)" test $rc -eq 0
check "ten problems checked" test "$(grep -c ': [0-9]* elements checked' "$LOG/launch.txt")" -eq 10
echo "== libtunert vendor launches"
cat "$LOG/launch.txt"
finish
