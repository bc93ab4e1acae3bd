#!/usr/bin/env bash
# On a GPU: the tensormap fixture (tests/fixtures/recipes/tensormap.lua) tuned, bundled and launched
# through libtunert, whose tensor maps it builds from the caller's pointers (docs/runtime.md). Two
# bundles, one per map (SWZ=0 uses tm0, SWZ=128 the 128-byte-swizzled tm128), each launched by
# tunert_tmap_gpu: outputs exact for both problems (one with a partial last box), for new, repeated
# and uncached pointers; misaligned pointers refused; host costs of encoding printed.
# Skipped (77) without a GPU. Logs in $OUT when set.
. "$(dirname "$0")/../integration/lib.sh"
RUNNER="${TUNERT_TMAP_GPU:?set TUNERT_TMAP_GPU to the tunert_tmap_gpu binary}"
FX="$SRC/tests/fixtures/recipes/tensormap.lua"
LOG="${OUT:-$WORK}"
mkdir -p "$LOG"
for swz in 0 128; do
  "$TUNE" run "$FX" --device cuda:0 --db "t$swz.db" --seed 5 --only "SWZ=$swz" >"$LOG/run$swz.txt" 2>&1
  rc=$?
  skip_without_gpu "$LOG/run$swz.txt"
  check "tune run SWZ=$swz exits 0 (rc $rc)" test $rc -eq 0
  n_ok=$(sql "t$swz.db" "select count(*) from results where status='ok' and err_max_abs = 0")
  check "SWZ=$swz: 4 results ok (2 configs x 2 problems: $n_ok)" test "$n_ok" -eq 4
  "$TUNE" bundle --recipe tensormap --db "t$swz.db" -o "t$swz.bundle" >"$LOG/bundle$swz.txt" 2>&1
  check "bundle SWZ=$swz (rc $?)" contains "$LOG/bundle$swz.txt" "checked with libtunert"
  "$RUNNER" "t$swz.bundle" >"$LOG/launch$swz.txt" 2>&1
  rc=$?
  check "libtunert launches of SWZ=$swz are exact (rc $rc)" test $rc -eq 0
  [ $rc -eq 0 ] || tail -20 "$LOG/launch$swz.txt" >&2
  check "SWZ=$swz bundle chose SWZ=$swz variants" contains "$LOG/launch$swz.txt" "\"SWZ\":$swz"
done
echo
for swz in 0 128; do echo "== SWZ=$swz"; cat "$LOG/launch$swz.txt"; done
finish
