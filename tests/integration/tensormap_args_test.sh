#!/usr/bin/env bash
# Tensor-map args and zeroed scratch on the CPU side (docs/tensormap-args.md): recipe errors name the
# arg and the cause; the fixture and the GEMM TMA variants compile (--compile-only).
. "$(dirname "$0")/lib.sh"
mkdir -p recipes
cp -r "$SRC/tests/fixtures/templates" .
FX="$SRC/tests/fixtures/recipes/tensormap.lua"
expect_error() { # name pattern
  "$TUNE" run "recipes/$1.lua" --compile-only --db e.db >"$1.txt" 2>&1
  local rc=$?
  check "$1 fails (rc $rc)" test $rc -ne 0
  check "$1 message" contains "$1.txt" "$2"
}
variant() { sed "$1" "$FX" > "recipes/$2.lua"; cmp -s "$FX" "recipes/$2.lua" && echo "FAIL: sed for $2 changed nothing" >&2; }
variant 's/swizzle = 128, l2_promotion/swizle = 128, l2_promotion/' field
expect_error field "arg tm128: unknown tensormap field 'swizle'"
variant 's/tensor = "src", box = { 64, "BOX_R" }/tensor = "nope", box = { 64, "BOX_R" }/' tensor
expect_error tensor "arg tm128: tensormap tensor 'nope' is not a tensor arg"
variant 's/tensor = "src", box = { 64, "BOX_R" }/tensor = "R", box = { 64, "BOX_R" }/' scalar
expect_error scalar "tensormap tensor 'R' is not a tensor arg"
variant 's/swizzle = 128, l2_promotion/swizzle = 100, l2_promotion/' swizzle
expect_error swizzle "arg tm128: tensormap swizzle must be 0, 32, 64 or 128"
variant 's/l2_promotion = 128/l2_promotion = 32/' l2
expect_error l2 "tensormap l2_promotion must be 0, 64, 128 or 256"
variant 's/l2_promotion = 128/oob = "inf"/' oob
expect_error oob "tensormap oob must be"
variant 's/box = { 64, "BOX_R" }, //' nobox
expect_error nobox "arg tm128: tensormap needs box"
variant 's/box = { 64, "BOX_R" }/box = { 64, "BOX_R", 1 }/' rank
expect_error rank "arg tm128: tensormap box: want 2 integers, one per dim"
variant 's/box = { 64, "BOX_R" }/box = { 64, "BOX_Q" }/' name
expect_error name "unknown name 'BOX_Q'"
variant 's/box = { 64, "BOX_R" }/box = { 64, "BOX_R" }, element_strides = { 1, 9 }/' estr
expect_error estr "element_strides entries must be 1..8"
variant 's/{ "tm0", tensormap = {/{ "tm0", output = true, tensormap = {/' extra
expect_error extra "arg tm0: a tensormap arg takes no field 'output'"
variant 's/shape = { "R", "C" }, init = /shape = { "R", "C" }, zero = true, init = /' zero
expect_error zero "arg src: zero = true is for scratch tensors"
# the fixture itself compiles (4 configs)
"$TUNE" run "$FX" --compile-only --db f.db >fx.txt 2>&1
check "fixture compiles (rc $?)" contains fx.txt "compile: 4 compiled"
# GEMM: the TMA variants of one large shape compile for sm_90a without spills
"$TUNE" run "$SRC/recipes/gemm.lua" --compile-only --db g.db --problem m4096n4096k4096_col --only USE_TMA=1,BLOCK_N=256 >g.txt 2>&1
check "gemm TMA compile-only exits 0" test $? -eq 0
n=$(sql g.db "select count(*) from binaries where ok = 1 and options like '%-DUSE_TMA=1%' and options like '%-DTMA_ARGS=2%'")
check "gemm TMA variants compiled ($n)" test "$n" -ge 4
s=$(sql g.db "select count(*) from binaries where spill_stores > 0 or spill_loads > 0 or ok = 0")
check "no failed or spilling binary ($s)" test "$s" -eq 0
finish
