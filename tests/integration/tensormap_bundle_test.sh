#!/usr/bin/env bash
# tune bundle + libtunert with tensor-map args, without a GPU (docs/runtime.md, docs/tensormap-args.md):
# the fixture tests/fixtures/recipes/tensormap.lua is compiled (--compile-only) and its results are
# then marked ok with SYNTHETIC times (this machine has no GPU; nothing here is a measurement: the
# device is named so in the bundle, and only the stored spec and the selection are checked). The
# bundle stores each map's tensor, dtype, dims/strides/box (expressions, or values for a Lua
# function), swizzle, l2_promotion, oob and element strides; libtunert evaluates them per problem.
. "$(dirname "$0")/lib.sh"
INSPECT="${TUNERT_INSPECT:?set TUNERT_INSPECT}"
FX="$SRC/tests/fixtures/recipes/tensormap.lua"

# synthetic "ok" results: a different winner per problem (SWZ 0 for r500c384, SWZ 128 for r512c384)
synth() { # db
  synth_ok "$1" r500c384 '{"SWZ":0,"BOX_R":8}' r512c384 '{"SWZ":128,"BOX_R":32}'
}

# 1. the fixture as it is (tm0's box is a Lua function, the launch grid too: exact-only entries)
mkdir -p t1/recipes && cp "$FX" t1/recipes/ && cp -r "$SRC/tests/fixtures/templates" t1/
(cd t1 && "$TUNE" run recipes/tensormap.lua --compile-only --db f.db) >c1.txt 2>&1
check "fixture compiles (rc $?)" contains c1.txt "compile: 4 compiled"
synth t1/f.db
(cd t1 && "$TUNE" bundle --recipe tensormap --db f.db -o t.bundle) >b1.txt 2>&1
check "bundle of a recipe with tensor maps exits 0 ($?)" test -f t1/t.bundle
check "it no longer refuses tensor maps" lacks b1.txt "does not build tensor maps"
check "checked with libtunert" contains b1.txt "checked with libtunert"
sql t1/t.bundle "select key, value from meta where key like 'format%' order by key" >meta.txt
check "format 1.6" test "$(tr '\n' ' ' <meta.txt)" = "format_major|1 format_minor|6 "
sql t1/t.bundle "select idx, name, role, dtype from args where role = 'tensormap' order by idx" >args.txt
check "the maps are args of role tensormap with the tensor's dtype" test "$(tr '\n' ' ' <args.txt)" = "6|tm0|tensormap|bf16 7|tm128|tensormap|bf16 "
sql t1/t.bundle "select e.problem_name, t.idx, t.tensor, t.dtype, t.dims, t.strides, t.box, t.swizzle, t.l2_promotion, t.oob, t.element_strides
  from entry_tensormaps t join entries e on e.id = t.entry_id order by e.problem_name, t.idx" >spec.txt
cat >want.txt <<'EOF'
r500c384|6|0|bf16|C, R|2 * (C)|64, 8|0|256|zero|
r500c384|7|0|bf16|C, R|2 * (C)|64, BOX_R|128|128|zero|
r512c384|6|0|bf16|C, R|2 * (C)|64, 32|0|256|zero|
r512c384|7|0|bf16|C, R|2 * (C)|64, BOX_R|128|128|zero|
EOF
check "stored spec: dims (shape reversed) and packed strides as expressions, tm0's function box as values, tm128's as an expression" cmp -s spec.txt want.txt
[ -s spec.txt ] && ! cmp -s spec.txt want.txt && diff want.txt spec.txt >&2
sql t1/t.bundle "select problem_name, v.params_json from entries e join variants v on v.id = e.variant_id order by problem_name" >win.txt
check "each problem got its synthetic winner" test "$(tr '\n' ' ' <win.txt)" = 'r500c384|{"SWZ":0,"BOX_R":8} r512c384|{"SWZ":128,"BOX_R":32} '
"$INSPECT" t1/t.bundle --arch sm_90a --select tensormap C=384,R=512 --try-launch >s1.txt 2>&1
check "select r512c384" contains s1.txt "reason:   exact"
check "tm128 evaluated for BOX_R 32" contains s1.txt "arg tm128        tensormap of src (bf16) dims {384, 512} strides {768} box {64, 32} swizzle 128 l2_promotion 128 oob zero"
check "tm0 from its stored values" contains s1.txt "arg tm0          tensormap of src (bf16) dims {384, 512} strides {768} box {64, 32} swizzle 0 l2_promotion 256 oob zero"
if python3 -c "import ctypes; ctypes.CDLL('libcuda.so.1')" 2>/dev/null; then
  echo "(a driver is present: the no-driver launch check is skipped)"
else
  check "launching says there is no driver" contains s1.txt "launch: no driver"
fi

# 2. the expression form (grid and every box as expressions): portable entries, maps follow the problem
mkdir -p t2/recipes && cp -r "$SRC/tests/fixtures/templates" t2/
sed -e 's|grid = function(c, p) return { p.C // 64, (p.R + c.BOX_R - 1) // c.BOX_R, 1 } end,|grid = { "C // 64", "(R + BOX_R - 1) // BOX_R", 1 },|' \
    -e 's|box = function(p, c) return { 64, c.BOX_R } end|box = { 64, "BOX_R" }, element_strides = { 1, 1 }, oob = "nan"|' "$FX" >t2/recipes/tensormap.lua
check "expression recipe differs in grid and box" test "$(grep -c 'BOX_R - 1) // BOX_R\|oob = "nan"' t2/recipes/tensormap.lua)" -eq 2
(cd t2 && "$TUNE" run recipes/tensormap.lua --compile-only --db f.db) >c2.txt 2>&1
synth t2/f.db
(cd t2 && "$TUNE" bundle --recipe tensormap --db f.db -o t.bundle) >b2.txt 2>&1
check "expression bundle written" contains b2.txt "wrote t.bundle"
check "its entries are portable" contains b2.txt "portable: expressions"
sql t2/t.bundle "select distinct t.box, t.oob, t.element_strides from entry_tensormaps t where t.idx = 6" >s2.txt
check "tm0: box expression, oob nan, element strides stored" test "$(cat s2.txt)" = "64, BOX_R|nan|1, 1"
"$INSPECT" t2/t.bundle --arch sm_90a --select tensormap C=768,R=1000 >near.txt 2>&1
check "a problem that was not tuned gets the nearest variant" contains near.txt "reason:   nearest"
check "its maps are evaluated for it" contains near.txt "arg tm0          tensormap of src (bf16) dims {768, 1000} strides {1536} box {64, 32} swizzle 0 l2_promotion 256 oob nan"
"$INSPECT" t2/t.bundle --arch sm_90a --select tensormap C=100,R=1000 >bad.txt 2>&1
check "a map the driver would refuse rejects the variant, with the reason" contains bad.txt "tensor map tm0 of src: stride 2 is 200 bytes, want a multiple of 16"

# 3. a box function in an otherwise expression recipe: exact-only, and the bundle says why
mkdir -p t3/recipes && cp -r "$SRC/tests/fixtures/templates" t3/
sed -e 's|grid = function(c, p) return { p.C // 64, (p.R + c.BOX_R - 1) // c.BOX_R, 1 } end,|grid = { "C // 64", "(R + BOX_R - 1) // BOX_R", 1 },|' "$FX" >t3/recipes/tensormap.lua
(cd t3 && "$TUNE" run recipes/tensormap.lua --compile-only --db f.db) >c3.txt 2>&1
synth t3/f.db
(cd t3 && "$TUNE" bundle --recipe tensormap --db f.db -o t.bundle) >b3.txt 2>&1
check "the box function makes exact-only entries, named" contains b3.txt "exact-only: arg tm0 tensormap box: a Lua function (.*tensormap.lua:24)"

# 4. a bundle without tensor maps written now still opens as 1.0 would: copy from the recorded data
"$TUNE" bundle --recipe copy --db "$SRC/data/recorded/copy.db" --arch sm_90a -o c.bundle --allow-source-change --quiet >b4.txt 2>&1
n=$(sql c.bundle "select count(*) from entry_tensormaps")
check "a bundle without maps has an empty entry_tensormaps ($n)" test "$n" = 0
python3 -c "import sqlite3,sys; d=sqlite3.connect(sys.argv[1]); d.execute('drop table entry_tensormaps'); d.execute(\"update meta set value='0' where key='format_minor'\"); d.commit()" c.bundle
"$INSPECT" c.bundle --arch sm_90a --select copy N=16777216 >old.txt 2>&1
check "a format 1.0 bundle (no entry_tensormaps) opens and selects" contains old.txt "reason:   exact"
finish
