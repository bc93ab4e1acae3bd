#!/usr/bin/env bash
# tune bundle + libtunert with thread-block clusters, without a GPU (docs/runtime.md, docs/recipes.md):
# the fixture tests/fixtures/recipes/cluster.lua is compiled (--compile-only) and its results are then
# marked ok with SYNTHETIC times (no GPU here; nothing is a measurement: the device is named so in the
# bundle, and only the stored launch geometry and the selection are checked). The bundle (format 1.2)
# stores each launch's cluster as expressions (launches.cluster) and min_reader_minor = 2; libtunert
# evaluates it per problem with the tuner's rule, shows it (tunert_inspect), still opens 1.1 bundles,
# and refuses a bundle that needs a newer reader.
. "$(dirname "$0")/lib.sh"
INSPECT="${TUNERT_INSPECT:?set TUNERT_INSPECT}"
FX="$SRC/tests/fixtures/recipes/cluster.lua"

# synthetic "ok" results for the variants that were compiled (the skipped ones stay skipped):
# CL 4 / THREADS 64 wins nb64r2, CL 2 / THREADS 32 wins nb6r1
synth() { # db
  synth_ok "$1" nb64r2 '{"CL":4,"THREADS":64}' nb6r1 '{"CL":2,"THREADS":32}'
}

prep() { # dir recipe-file
  mkdir -p "$1/recipes" && cp "$2" "$1/recipes/cluster.lua" && cp -r "$SRC/tests/fixtures/templates" "$1/"
  (cd "$1" && "$TUNE" run recipes/cluster.lua --compile-only --db f.db) >"$1.compile.txt" 2>&1
  synth "$1/f.db"
  (cd "$1" && "$TUNE" bundle --recipe cluster --db f.db -o t.bundle) >"$1.bundle.txt" 2>&1
}

# 1. the fixture: cluster = { "CL", 1, 1 }, an expression
prep t1 "$FX"
check "fixture compiles (4 configs x 2 problems, 2 skipped)" contains t1.compile.txt "compile: 4 compiled"
check "CL 4 on 6 blocks skipped with the reason" contains t1.compile.txt "launch step 1: cluster {4, 1, 1} does not divide grid {6, 1, 1} (x: 6 % 4 = 2)"
check "bundle written and checked with libtunert" contains t1.bundle.txt "checked with libtunert"
check "entries portable (the cluster is an expression)" contains t1.bundle.txt "portable: expressions"
sql t1/t.bundle "select key, value from meta where key in ('format_major', 'format_minor', 'min_reader_minor') order by key" >meta.txt
check "format 1.6, min_reader_minor 2" test "$(tr '\n' ' ' <meta.txt)" = "format_major|1 format_minor|6 min_reader_minor|2 "
sql t1/t.bundle "select e.problem_name, v.params_json, l.grid, l.block, l.cluster from launches l join entries e on e.id = l.entry_id
  join variants v on v.id = e.variant_id order by e.problem_name" >launch.txt
cat >want.txt <<'EOF'
nb64r2|{"CL":4,"THREADS":64}|NB, ROWS, 1|THREADS, 1, 1|CL, 1, 1
nb6r1|{"CL":2,"THREADS":32}|NB, ROWS, 1|THREADS, 1, 1|CL, 1, 1
EOF
check "stored launches: the synthetic winners, the cluster as an expression" cmp -s launch.txt want.txt
[ -s launch.txt ] && ! cmp -s launch.txt want.txt && diff want.txt launch.txt >&2
"$INSPECT" t1/t.bundle --arch sm_90a --select cluster NB=64,ROWS=2 >s1.txt 2>&1
check "exact selection of nb64r2" contains s1.txt "reason:   exact"
check "its launch has the cluster" contains s1.txt "launch 0: cluster_peer grid (64, 2, 1) block (64, 1, 1) shared 0 cluster (4, 1, 1)"
"$INSPECT" t1/t.bundle --arch sm_90a --select cluster NB=6,ROWS=1 >s2.txt 2>&1
check "nb6r1: cluster 2" contains s2.txt "grid (6, 1, 1) block (32, 1, 1) shared 0 cluster (2, 1, 1)"
"$INSPECT" t1/t.bundle --arch sm_90a --select cluster NB=62,ROWS=2 >s3.txt 2>&1
check "NB=62: the CL 4 variant is refused (4 does not divide 62) ..." contains s3.txt "cluster {4, 1, 1} does not divide grid {62, 2, 1}"
check "... and the CL 2 one taken" contains s3.txt "grid (62, 2, 1) block (32, 1, 1) shared 0 cluster (2, 1, 1)"
"$INSPECT" t1/t.bundle --arch sm_80 --select cluster NB=64,ROWS=2 >s4.txt 2>&1
check "no cluster variant for an sm_80 device (no binary for it either)" lacks s4.txt "cluster (4, 1, 1)"

# 2. old readers' bundles: a 1.1 bundle (no launches.cluster column) opens, every launch plain
cp t1/t.bundle old.bundle
python3 - old.bundle <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("alter table launches drop column cluster")
db.execute("update meta set value = '1' where key = 'format_minor'")
db.execute("delete from meta where key = 'min_reader_minor'")
db.commit()
PY
"$INSPECT" old.bundle --arch sm_90a --select cluster NB=64,ROWS=2 >old.txt 2>&1
check "a 1.1 bundle opens and selects" contains old.txt "reason:   exact"
check "its launches have no cluster" contains old.txt "launch 0: cluster_peer grid (64, 2, 1) block (64, 1, 1) shared 0$"
# ... and a bundle that needs a newer reader is refused, saying so
cp t1/t.bundle new.bundle
python3 -c 'import sqlite3,sys; db=sqlite3.connect(sys.argv[1]); db.execute("update meta set value = ? where key = ?", ("7", "min_reader_minor")); db.commit()' new.bundle
"$INSPECT" new.bundle >new.txt 2>&1
check "min_reader_minor 7 refused (rc $?)" contains new.txt "needs a reader of format 1.7 or newer"

# 3. cluster as a Lua function: stored as its values, entries exact-only and saying why
sed 's|cluster = { "CL", 1, 1 },|cluster = function(c, p, d) return { c.CL, 1, 1 } end,|' "$FX" >fn.lua
check "function form differs" test "$(grep -c 'cluster = function' fn.lua)" -eq 1
prep t3 fn.lua
check "function-form bundle written" contains t3.bundle.txt "checked with libtunert"
sql t3/t.bundle "select e.problem_name, l.cluster, e.portable, e.exact_why from launches l join entries e on e.id = l.entry_id order by e.problem_name" >fn.txt
check "values stored, exact-only with the reason" test "$(grep -c '^nb64r2|4, 1, 1|0|launch cluster: a Lua function (.*recipes/cluster.lua:[0-9]*)$\|^nb6r1|2, 1, 1|0|launch cluster: a Lua function (.*recipes/cluster.lua:[0-9]*)$' fn.txt)" -eq 2
[ "$(grep -c '|0|launch cluster: a Lua function' fn.txt)" -eq 2 ] || cat fn.txt >&2

# 4. no cluster field: plain launches, the bundle as for any recipe (no min_reader_minor)
grep -v 'cluster = { "CL", 1, 1 },' "$FX" >plain.lua
check "plain form lacks the field" test "$(grep -c 'cluster =' plain.lua)" -eq 0
prep t4 plain.lua
check "plain bundle written" contains t4.bundle.txt "checked with libtunert"
sql t4/t.bundle "select distinct cluster from launches" >plain.txt
check "every launch 1, 1, 1" test "$(cat plain.txt)" = "1, 1, 1"
sql t4/t.bundle "select count(*) from meta where key = 'min_reader_minor'" >plainmeta.txt
check "no min_reader_minor" test "$(cat plainmeta.txt)" = "0"
finish
