#!/usr/bin/env bash
# On a GPU: tensor-map args (no swizzle and 128-byte swizzle, a partial last box) and zeroed scratch
# (tests/fixtures/recipes/tensormap.lua). Without `zero = true` the shared scratch keeps the previous
# variant's sum and verification must fail: the control that shows the check can fail.
# Skipped (77) without a GPU.
. "$(dirname "$0")/../integration/lib.sh"
"$TUNE" run "$SRC/tests/fixtures/recipes/tensormap.lua" --device cuda:0 --db t.db --seed 5 >run.txt 2>&1
rc=$?
skip_without_gpu run.txt
check "run exits 0 (rc $rc)" test $rc -eq 0
[ $rc -eq 0 ] || tail -25 run.txt >&2
n_ok=$(sql t.db "select count(*) from results where status='ok' and samples >= 10 and err_max_abs = 0")
check "8 variants (4 configs x 2 problems) copy exactly through their tensor maps ($n_ok)" test "$n_ok" -eq 8
# control: the same recipe without zeroing
mkdir -p fx/recipes
cp -r "$SRC/tests/fixtures/templates" fx/
sed 's/, zero = true//' "$SRC/tests/fixtures/recipes/tensormap.lua" > fx/recipes/tensormap.lua
check "control recipe differs" lacks fx/recipes/tensormap.lua "zero = true"
"$TUNE" run fx/recipes/tensormap.lua --device cuda:0 --db u.db --seed 5 >control.txt 2>&1
n_wrong=$(sql u.db "select count(*) from results where status='wrong'")
check "without zero = true a later variant sees the stale sum ($n_wrong wrong)" test "$n_wrong" -ge 1
# a box the driver cannot take is that variant's launch_error, with the map in the message
sed 's/box = { 64, "BOX_R" }/box = { 64, "BOX_R * 16" }/' "$SRC/tests/fixtures/recipes/tensormap.lua" > fx/recipes/tensormap.lua
"$TUNE" run fx/recipes/tensormap.lua --device cuda:0 --db v.db --seed 5 --problem r512c384 >bad.txt 2>&1
n_le=$(sql v.db "select count(*) from results where status='launch_error' and error_text like '%box 2 is 512%'")
check "a 512-row box is a launch_error naming the box ($n_le)" test "$n_le" -ge 1
finish
