#!/usr/bin/env bash
# On a GPU: paged decode (recipes/attention/decode.lua) tuned for one problem with two configs
# (SPLITS 1: the split kernel writes o; SPLITS 8 with the cp.async ring: split + combine), each
# bundled and run by tunert_decode_graph_gpu: one
# launch sequence captured into a CUDA graph and replayed for 4 steps with other seq_lens each (0, 1, page boundaries, the maximum), strided q, o
# and HND caches, every output checked against an fp64 host reference.
# The same for attention.decode_tma (below). Skipped (77) without a GPU. Logs in $OUT when set.
. "$(dirname "$0")/../integration/lib.sh"
RUNNER="${TUNERT_DECODE_GRAPH_GPU:?set TUNERT_DECODE_GRAPH_GPU to the tunert_decode_graph_gpu binary}"
LOG="${OUT:-$WORK}"
mkdir -p "$LOG"
PROBLEM=b32hq32hkv8d128p16x256
# tuned RECIPE NAME CONFIG LAYOUT...: CONFIG of recipes/attention/RECIPE.lua tuned for PROBLEM into
# NAME.db (one verified result), bundled, and its graph replays run over each cache LAYOUT
tuned() {
  local recipe=$1 name=$2 config=$3
  shift 3
  (cd "$SRC" && "$TUNE" run "recipes/attention/$recipe.lua" --device cuda:0 --db "$WORK/$name.db" --strategy exhaustive \
     --problem "$PROBLEM" --only "$config") >"$LOG/$name.run.txt" 2>&1
  local rc=$?
  skip_without_gpu "$LOG/$name.run.txt"
  check "tune run $recipe $config exits 0 (rc $rc)" test $rc -eq 0
  local n_ok
  n_ok=$(sql "$name.db" "select count(*) from results where status = 'ok'")
  check "$recipe $config: verified ($n_ok ok)" test "$n_ok" -eq 1
  (cd "$SRC" && "$TUNE" bundle --recipe "attention.$recipe" --db "$WORK/$name.db" -o "$WORK/$name.bundle") \
    >"$LOG/$name.bundle.txt" 2>&1
  check "bundle $recipe $config (rc $?)" test -f "$name.bundle"
  for layout in "$@"; do
    "$RUNNER" "$name.bundle" "attention.$recipe" "$layout" >"$LOG/$name.graph.$layout.txt" 2>&1
    rc=$?
    check "$recipe $config $layout: graph replays match the reference (rc $rc)" test $rc -eq 0
    [ $rc -eq 0 ] || tail -20 "$LOG/$name.graph.$layout.txt" >&2
  done
}
# attention.decode: one split (the split kernel writes o), eight with the cp.async ring and a combine
tuned decode d0 "SPLITS=1,BLOCK_N=32,WARPS=4,VEC_BYTES=16,GQA_PACK=1,STAGES=2,KV_RING=0" hnd
tuned decode d1 "SPLITS=8,BLOCK_N=32,WARPS=4,VEC_BYTES=16,GQA_PACK=1,STAGES=1,KV_RING=3" hnd
# attention.decode_tma, each over the three cache layouts: HND (the producer's cp.async path),
# packed NHD (tensor copies), and packed NHD in a pool of twice the batch's pages (tiles with a
# page past the maps take the cp.async path, the others tensor copies)
tuned decode_tma t0 "SPLITS=1,BLOCK_N=64,WARPS=4,KV_RING=3" hnd nhd nhd_pool2
tuned decode_tma t1 "SPLITS=8,BLOCK_N=32,WARPS=2,KV_RING=4" hnd nhd nhd_pool2
echo
for f in "$LOG"/*.graph.*.txt; do echo "== $f"; cat "$f"; done
finish
