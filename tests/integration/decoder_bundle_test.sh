#!/usr/bin/env bash
# The decoder block example against bundles made from the recorded databases, without a GPU.
# One bundle per GPU the databases were measured on (tune bundle takes one device's results):
# gemm, rmsnorm and elementwise in one, attention.varlen and attention.decode in the other.
# `decoder_block --plan` must find a tuned, nearest, fallback or vendor entry for all nine steps of
# the ragged prefill and of the decode step, each asked as the one problem the program has (M = T
# packed tokens, never cut into tuned row counts), and bind them; the program's defaults must equal
# tools/bench/decoder_block_torch.py's; a bundle that lacks a family, a missing file, a truncated
# bundle, bad sizes and a run without a GPU fail clearly (exit 4, 2 or 3 and a message).
. "$(dirname "$0")/lib.sh"
INSPECT="${TUNERT_INSPECT:?set TUNERT_INSPECT}"
DECODER="${DECODER:?set DECODER to the decoder_block binary}"
REC="$SRC/data/recorded"

# The recorded databases may predate a recipe or template edit: this test is about coverage, not
# provenance (bundle_test checks the refusal), so it bundles with --allow-source-change.
bundle() { # bundle OUT RECIPES DB...
  local out=$1 recipes=$2; shift 2
  local dbs=()
  for d in "$@"; do dbs+=(--db "$d"); done
  (cd "$SRC" && "$TUNE" bundle "${dbs[@]}" --recipe "$recipes" --arch sm_90a --allow-source-change --quiet -o "$WORK/$out")
}

for d in gemm rmsnorm elementwise attention.varlen attention.decode; do
  [ -f "$REC/$d.db" ] || { echo "SKIP: $REC/$d.db is absent: the decoder block's recordings are incomplete"; exit 0; }
done

# 1. the two bundles
bundle dense.bundle gemm,gemm.splitk,rmsnorm,rmsnorm.add,elementwise "$REC/gemm.db" "$REC/rmsnorm.db" "$REC/elementwise.db" >d.txt 2>&1
check "bundle of gemm, rmsnorm, elementwise (rc $?)" test -f dense.bundle
bundle attn.bundle attention.varlen,attention.decode "$REC/attention.varlen.db" "$REC/attention.decode.db" >a.txt 2>&1
check "bundle of attention.varlen, attention.decode (rc $?)" test -f attn.bundle
"$INSPECT" dense.bundle --arch sm_90a >inspect.txt 2>&1
"$INSPECT" attn.bundle --arch sm_90a >>inspect.txt 2>&1
for f in gemm gemm.splitk rmsnorm rmsnorm.add elementwise attention.varlen attention.decode; do
  check "a bundle has family $f" contains inspect.txt "^$f:"
done
"$INSPECT" dense.bundle --arch sm_90a --select elementwise rows=5,cols=14336 >ew.txt 2>&1
check "elementwise serves an untuned row count (nearest entry)" contains ew.txt "kind: *nearest"
"$INSPECT" dense.bundle --arch sm_90a --select elementwise rows=3,cols=6 >ew6.txt 2>&1
check "elementwise serves an untuned row length (fallback)" contains ew6.txt "kind: *fallback"

# 2. the plan: every step of both phases, one problem each, bound
"$DECODER" dense.bundle attn.bundle --plan >plan.txt 2>&1
rc=$?
check "the plan binds every step (rc $rc)" test $rc -eq 0
check "plan ok" contains plan.txt "plan ok: every step of the prefill and the decode step has a variant, one problem each"
n=$(grep -cE "^   [a-z.]+ \[(tuned|nearest|fallback|vendor)\] from " plan.txt)
check "18 steps with a selection ($n)" test "$n" -eq 18
check "no step without a variant" lacks plan.txt "NO VARIANT"
check "no step cut into tuned problems" lacks plan.txt "launches of the tuned problem"
T=$(grep -o "packed into T = [0-9]*" plan.txt | grep -o "[0-9]*$")
check "the packed prompts' token count is printed ($T)" test -n "$T"
for p in "M=$T N=6144 K=4096 b_layout=col" "M=$T N=14336 K=4096" "M=$T N=4096 K=14336" "T=$T H=4096 residual=1" \
         "rows=$T cols=14336" "B=5 T=$T HQ=32 HKV=8 D=128 causal=1" "M=5 N=6144 K=4096" "rows=5 cols=14336" \
         "B=5 HQ=32 HKV=8 D=128 page_size=16 max_pages=188"; do
  check "asked as one problem: $p" contains plan.txt "$p"
done
check "prefill attention through attention.varlen" contains plan.txt "^   attention.varlen \["
check "decode attention through attention.decode" contains plan.txt "^   attention.decode \["
check "says how prefill attention reads q, k, v" contains plan.txt "prefill attention reads q, k, v"

# gemm.skinny in the bundle as well: asked first for every GEMM step, taken only inside its domain
# (M <= 128: the decode rows, never the packed prompts)
bundle skinny.bundle gemm,gemm.splitk,gemm.skinny,rmsnorm,rmsnorm.add,elementwise "$REC/gemm.db" \
  "$REC/h200/gemm.skinny.db" "$REC/rmsnorm.db" "$REC/elementwise.db" >s.txt 2>&1
check "bundle with gemm.skinny (rc $?)" test -f skinny.bundle
"$DECODER" skinny.bundle attn.bundle --plan >plan_skinny.txt 2>&1
check "the plan with gemm.skinny binds every step (rc $?)" contains plan_skinny.txt "plan ok"
check "no prefill GEMM through gemm.skinny" \
  awk -v t="M=$T " 'index($0, t) { getline sel; if (sel ~ /gemm\.skinny/) bad = 1 } END { exit bad }' plan_skinny.txt
check "every decode GEMM through one of the three families" \
  awk '/ M=5 / { getline sel; if (sel !~ /^   gemm(\.skinny|\.splitk)? \[/) bad = 1; n++ } END { exit bad || n != 4 }' plan_skinny.txt

# 3. the same sizes as the PyTorch baseline by default; other sizes from flags
want=$(python3 "$SRC/tools/bench/decoder_block_torch.py" --print-defaults)
lens=$(grep -o "^prefill: [0-9]* prompts of [0-9 ]* tokens" plan.txt | sed 's/.* of //; s/ tokens//; s/ /,/g')
steps=$(grep -o "then [0-9]* decode steps" plan.txt | grep -o "[0-9]*")
page=$(grep -o "(page [0-9]*" plan.txt | grep -o "[0-9]*")
check "defaults equal decoder_block_torch.py's ($want vs lens=$lens steps=$steps page=$page)" \
  test "$want" = "lens=$lens steps=$steps page=$page"
"$DECODER" dense.bundle attn.bundle --plan --lens 100,7 --steps 3 --page 32 >small.txt 2>&1
check "--lens 100,7 --steps 3 --page 32 plans (rc $?)" contains small.txt "plan ok"
check "at M = 107" contains small.txt "M=107 N=6144"
check "with a 4-page block table" contains small.txt "B=2 HQ=32 HKV=8 D=128 page_size=32 max_pages=4"
"$DECODER" dense.bundle --plan --lens 0,5 >badlens.txt 2>&1
check "a length of 0: usage, exit 2 (rc $?)" contains badlens.txt "usage: decoder_block"

# 4. bundles that lack families: a clear failure, or stand-ins
"$DECODER" dense.bundle --plan >nofam.txt 2>&1
rc=$?
check "without the attention bundle: exit 4 (rc $rc)" test $rc -eq 4
check "naming the missing families" contains nofam.txt "no family 'attention.varlen' in the bundle"
check "both attention steps" contains nofam.txt "cannot run 2 of the 18 steps"
check "and what to do" contains nofam.txt "tune bundle --recipe"
"$DECODER" dense.bundle --plan --standins >standins.txt 2>&1
check "--standins plans the rest (rc $?)" contains standins.txt "plan ok: every step of the prefill and the decode step has a variant or a stand-in"
check "and marks the stand-ins" contains standins.txt "STAND-IN"
"$DECODER" "$WORK/absent.bundle" --plan >absent.txt 2>&1
check "a missing bundle file: exit 4 (rc $?)" contains absent.txt "absent.bundle"
head -c 30000 dense.bundle >trunc.bundle
"$DECODER" trunc.bundle --plan >trunc.txt 2>&1
rc=$?
check "a truncated bundle: exit 4 (rc $rc)" test $rc -eq 4
check "says so" contains trunc.txt "truncated"
"$DECODER" >usage.txt 2>&1
check "no bundle: usage, exit 2 (rc $?)" contains usage.txt "usage: decoder_block BUNDLE"

# 5. without a GPU the run (not --plan) stops cleanly
if python3 -c "import ctypes; ctypes.CDLL('libcuda.so.1')" 2>/dev/null; then
  echo "(a driver is present: the no-GPU check is skipped)"
else
  "$DECODER" dense.bundle attn.bundle >nogpu.txt 2>&1
  rc=$?
  check "no GPU: exit 3 (rc $rc)" test $rc -eq 3
  check "no GPU: says so" contains nogpu.txt "no usable NVIDIA GPU"
fi
finish
