#!/usr/bin/env bash
# The decoder block example against bundles made from the recorded databases, without a GPU:
# the bundle holds every family the example needs (GEMM only when data/recorded/gemm.db exists,
# decode only when attention.db has a result for the block's decode problem of the current recipe:
# skipped with the reason otherwise), `decoder_block --plan` chooses and binds a variant for every
# step, and it fails clearly (exit 4 and a message naming what is missing, no crash) for a bundle
# that lacks a family, a missing file and a truncated bundle.
. "$(dirname "$0")/lib.sh"
INSPECT="${TUNERT_INSPECT:?set TUNERT_INSPECT}"
DECODER="${DECODER:?set DECODER to the decoder_block binary}"
REC="$SRC/data/recorded"

# The recorded databases may predate a template edit: this test is about coverage, not provenance
# (bundle_test checks the refusal), so it bundles with --allow-source-change.
bundle() { # bundle OUT RECIPES DB...
  local out=$1 recipes=$2; shift 2
  local dbs=()
  for d in "$@"; do dbs+=(--db "$d"); done
  (cd "$SRC" && "$TUNE" bundle "${dbs[@]}" --recipe "$recipes" --arch sm_90a --allow-source-change --quiet -o "$WORK/$out")
}

RECIPES=rmsnorm,elementwise,attention.prefill
DBS=("$REC/rmsnorm.db" "$REC/elementwise.db" "$REC/attention.db")
DECODE_PROBLEM=b32hq32hkv8d128p16x256
HAVE_DECODE=0
if [ "$(sql "$REC/attention.db" "select count(*) from results r join problems p on p.id = r.problem_id
        where p.recipe_name = 'attention.decode' and p.name = '$DECODE_PROBLEM' and r.status = 'ok'")" != 0 ]; then
  HAVE_DECODE=1
  RECIPES=$RECIPES,attention.decode
else
  echo "SKIP (decode part): $REC/attention.db has no result for $DECODE_PROBLEM (recorded before the paged-decode" \
       "contract): the decode step is checked to be reported missing instead"
fi
HAVE_GEMM=0
if [ -f "$REC/gemm.db" ]; then
  HAVE_GEMM=1
  RECIPES=$RECIPES,gemm
  DBS+=("$REC/gemm.db")
else
  echo "SKIP (GEMM part): $REC/gemm.db is absent (no recorded GEMM run yet): the GEMM steps are checked to be reported missing instead"
fi

# 1. one bundle from all the recorded databases (tune bundle --db repeated)
bundle block.bundle "$RECIPES" "${DBS[@]}" >b.txt 2>&1
check "bundle from ${#DBS[@]} databases (rc $?)" test -f block.bundle
"$INSPECT" block.bundle --arch sm_90a >inspect.txt 2>&1
for f in rmsnorm rmsnorm.add elementwise attention.prefill; do
  check "the bundle has family $f" contains inspect.txt "^$f"
done
[ "$HAVE_DECODE" = 1 ] && check "the bundle has family attention.decode" contains inspect.txt "^attention.decode"
[ "$HAVE_GEMM" = 1 ] && check "the bundle has family gemm" contains inspect.txt "^gemm"
check "the source databases are recorded" test -n "$(sql block.bundle "select value from meta where key = 'source_db'" | grep attention.db)"

# 2. the example's plan: every step gets a variant (or, without GEMM, exactly the GEMM steps do not)
"$DECODER" block.bundle --plan >plan.txt 2>&1
rc=$?
check "rmsnorm tuned for the block's problem" contains plan.txt "tuned for this problem (t16384h4096)"
check "SiLU as 4 row chunks of the tuned r4096c14336" contains plan.txt "4 launches of the tuned problem r4096c14336"
check "prefill tuned for the block's problem" contains plan.txt "b4h32s4096d128c_gqa8"
if [ "$HAVE_DECODE" = 1 ]; then
  check "decode tuned for the block's problem" contains plan.txt "$DECODE_PROBLEM"
else
  check "the decode step is named as not runnable" contains plan.txt "no family 'attention.decode' in the bundle"
fi
missing=$(( (1 - HAVE_GEMM) * 4 + 1 - HAVE_DECODE ))
if [ "$missing" = 0 ]; then
  check "with GEMM and decode: the plan binds every step (rc $rc)" test $rc -eq 0
  check "plan ok" contains plan.txt "plan ok: every step has a variant"
else
  check "without GEMM or decode: exit 4 (rc $rc)" test $rc -eq 4
  check "the $missing missing steps are named as not runnable" contains plan.txt "cannot run $missing of the 10 steps"
  [ "$HAVE_GEMM" = 1 ] || check "with the reason" contains plan.txt "no family 'gemm' in the bundle"
fi
"$DECODER" block.bundle --plan --standins >standins.txt 2>&1
check "--standins plans the rest (rc $?)" contains standins.txt "plan ok"
[ "$missing" = 0 ] || check "and marks the stand-ins" contains standins.txt "STAND-IN"

# 3. a bundle that lacks families: a clear failure, not a crash
bundle norms.bundle rmsnorm "$REC/rmsnorm.db" >n.txt 2>&1
"$DECODER" norms.bundle --plan >nofam.txt 2>&1
rc=$?
check "a bundle without attention fails with exit 4 (rc $rc)" test $rc -eq 4
check "naming the missing family" contains nofam.txt "no family 'attention.prefill' in the bundle"
check "and what to do" contains nofam.txt "tune bundle --recipe"
check "the families it has still plan" contains nofam.txt "tuned for this problem (t16384h4096)"
"$DECODER" "$WORK/absent.bundle" --plan >absent.txt 2>&1
check "a missing bundle file: exit 4 (rc $?)" contains absent.txt "absent.bundle"
head -c 30000 block.bundle >trunc.bundle
"$DECODER" trunc.bundle --plan >trunc.txt 2>&1
rc=$?
check "a truncated bundle: exit 4 (rc $rc)" test $rc -eq 4
check "says so" contains trunc.txt "truncated"
"$DECODER" >usage.txt 2>&1
check "no bundle: usage, exit 2 (rc $?)" contains usage.txt "usage: decoder_block BUNDLE"

# 4. without a GPU the run (not --plan) stops cleanly
if python3 -c "import ctypes; ctypes.CDLL('libcuda.so.1')" 2>/dev/null; then
  echo "(a driver is present: the no-GPU check is skipped)"
else
  "$DECODER" block.bundle --standins >nogpu.txt 2>&1
  rc=$?
  check "no GPU: exit 3 (rc $rc)" test $rc -eq 3
  check "no GPU: says so" contains nogpu.txt "no usable NVIDIA GPU"
fi
finish
