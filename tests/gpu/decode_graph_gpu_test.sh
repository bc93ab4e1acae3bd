#!/usr/bin/env bash
# On a GPU: paged decode (recipes/attention/decode.lua) tuned for one problem with two configs
# (SPLITS 1: the split kernel writes o; SPLITS 8 with the cp.async ring: split + combine), each
# bundled and run by tunert_decode_graph_gpu: one launch sequence captured into a CUDA graph and
# replayed for 4 steps with other seq_lens each (0, 1, page boundaries, the maximum), strided q, o
# and HND caches, every output checked against an fp64 host reference.
# The same for attention.decode_tma (below). Skipped (77) without a GPU. Logs in $OUT when set.
. "$(dirname "$0")/../integration/lib.sh"
RUNNER="${TUNERT_DECODE_GRAPH_GPU:?set TUNERT_DECODE_GRAPH_GPU to the tunert_decode_graph_gpu binary}"
LOG="${OUT:-$WORK}"
mkdir -p "$LOG"
PROBLEM=b32hq32hkv8d128p16x256
CONFIGS=("SPLITS=1,BLOCK_N=32,WARPS=4,VEC_BYTES=16,GQA_PACK=1,STAGES=2,KV_RING=0"
         "SPLITS=8,BLOCK_N=32,WARPS=4,VEC_BYTES=16,GQA_PACK=1,STAGES=1,KV_RING=3")
for i in 0 1; do
  (cd "$SRC" && "$TUNE" run recipes/attention/decode.lua --device cuda:0 --db "$WORK/d$i.db" --strategy exhaustive \
     --problem "$PROBLEM" --only "${CONFIGS[$i]}") >"$LOG/run$i.txt" 2>&1
  rc=$?
  skip_without_gpu "$LOG/run$i.txt"
  check "tune run ${CONFIGS[$i]} exits 0 (rc $rc)" test $rc -eq 0
  n_ok=$(sql "d$i.db" "select count(*) from results where status = 'ok'")
  check "${CONFIGS[$i]}: verified ($n_ok ok)" test "$n_ok" -eq 1
  (cd "$SRC" && "$TUNE" bundle --recipe attention.decode --db "$WORK/d$i.db" -o "$WORK/d$i.bundle") >"$LOG/bundle$i.txt" 2>&1
  check "bundle ${CONFIGS[$i]} (rc $?)" test -f "d$i.bundle"
  "$RUNNER" "d$i.bundle" >"$LOG/graph$i.txt" 2>&1
  rc=$?
  check "graph replays of ${CONFIGS[$i]} match the reference (rc $rc)" test $rc -eq 0
  [ $rc -eq 0 ] || tail -20 "$LOG/graph$i.txt" >&2
done
# attention.decode_tma: SPLITS 1 and 8, each over the three cache layouts: HND (the producer's
# cp.async path), packed NHD (tensor copies), and packed NHD in a pool of twice the batch's pages
# (tiles with a page past the maps take the cp.async path, the others tensor copies)
TMA_CONFIGS=("SPLITS=1,BLOCK_N=64,WARPS=4,KV_RING=3" "SPLITS=8,BLOCK_N=32,WARPS=2,KV_RING=4")
for i in 0 1; do
  (cd "$SRC" && "$TUNE" run recipes/attention/decode_tma.lua --device cuda:0 --db "$WORK/t$i.db" --strategy exhaustive \
     --problem "$PROBLEM" --only "${TMA_CONFIGS[$i]}") >"$LOG/tma_run$i.txt" 2>&1
  rc=$?
  check "tune run decode_tma ${TMA_CONFIGS[$i]} exits 0 (rc $rc)" test $rc -eq 0
  n_ok=$(sql "t$i.db" "select count(*) from results where status = 'ok'")
  check "decode_tma ${TMA_CONFIGS[$i]}: verified ($n_ok ok)" test "$n_ok" -eq 1
  (cd "$SRC" && "$TUNE" bundle --recipe attention.decode_tma --db "$WORK/t$i.db" -o "$WORK/t$i.bundle") >"$LOG/tma_bundle$i.txt" 2>&1
  check "bundle decode_tma ${TMA_CONFIGS[$i]} (rc $?)" test -f "t$i.bundle"
  for layout in hnd nhd nhd_pool2; do
    "$RUNNER" "t$i.bundle" attention.decode_tma $layout >"$LOG/tma_graph$i.$layout.txt" 2>&1
    rc=$?
    check "decode_tma ${TMA_CONFIGS[$i]} $layout: graph replays match the reference (rc $rc)" test $rc -eq 0
    [ $rc -eq 0 ] || tail -20 "$LOG/tma_graph$i.$layout.txt" >&2
  done
done
echo
for i in 0 1; do echo "== ${CONFIGS[$i]}"; cat "$LOG/graph$i.txt"; done
for f in "$LOG"/tma_graph*.txt; do echo "== $f"; cat "$f"; done
finish
