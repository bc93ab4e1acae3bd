#!/usr/bin/env bash
# attention.decode_tma (recipes/attention/decode_tma.lua, templates/attention/decode_tma.cuh): the
# recipe loads with its domain and fallback, variants of each tile shape compile with NVRTC (no GPU)
# at head dims 128 and 64 without spills, and a bundle of them (synthetic times) carries the two
# tensor maps of every entry and a fallback per set of defines; the same for attention.decode_fp8_tma
# (the kernel over an e4m3 cache). The producer's paths (tensor copies, the cp.async fallback for
# other layouts and pools) run in tests/gpu/decode_graph_gpu_test.sh and, for the e4m3 cache, in
# decode_fp8_tma's own HND problem.
. "$(dirname "$0")/lib.sh"
R="$SRC/recipes/attention/decode_tma.lua"
compile() { # compile OUT PROBLEM ONLY...
  local out=$1 prob=$2; shift 2
  local only=()
  for o in "$@"; do only+=(--only "$o"); done
  "$TUNE" run "$R" --compile-only --arch sm_90a --db d.db --problem "$prob" "${only[@]}" >"$out" 2>&1
}
KINDS=(SPLITS=4,BLOCK_N=32,WARPS=2,KV_RING=4
       SPLITS=4,BLOCK_N=64,WARPS=4,KV_RING=3
       SPLITS=8,BLOCK_N=128,WARPS=8,KV_RING=3
       SPLITS=1,BLOCK_N=64,WARPS=2,KV_RING=6)

compile d128.txt b32hq32hkv8d128p16x256 "${KINDS[@]}"
check "head dim 128, GQA 4 compiles" test $? -eq 0
check "the space after constraints" contains d128.txt "attention.decode_tma: 96 of 216 configs satisfy the constraints"
check "four variants compiled" contains d128.txt "compile: 4 compiled"
compile d64.txt b32hq64hkv8d64p16x128 "${KINDS[@]}"
check "head dim 64, GQA 8 compiles" test $? -eq 0

n_err=$(sql d.db "select count(*) from results where status = 'compile_error'")
check "no compile errors ($n_err)" test "$n_err" = 0
n_ok=$(sql d.db "select count(*) from results where error_text = 'compile-only' and registers > 0 and spill_stores = 0")
check "eight compiled results without spills ($n_ok)" test "$n_ok" = 8

# bundled FAMILY NAME: NAME.db's results (synthetic times) bundled as NAME.bundle (log NAME.txt),
# with the two tensor maps of every entry
bundled() {
  local family=$1 name=$2
  synth_ok "$name.db"
  "$TUNE" bundle --recipe "$family" --db "$name.db" -o "$name.bundle" --arch sm_90a --no-ptx >"$name.txt" 2>&1
  check "$family: bundle written" test $? -eq 0
  local n_maps n_entries
  n_maps=$(sql "$name.bundle" "select count(*) from entry_tensormaps")
  n_entries=$(sql "$name.bundle" "select count(*) from entries")
  check "$family: two tensor maps per entry ($n_maps for $n_entries entries)" \
    test "$n_maps" -eq $((2 * n_entries)) -a "$n_entries" -gt 0
}
bundled attention.decode_tma d
n_fb=$(grep -c "^  fallback (" d.txt)
check "two fallback entries ($n_fb)" test "$n_fb" = 2

# attention.decode_fp8_tma: the same kernel over an e4m3 cache (one byte per element, per-head
# scales), its tiles compiled without spills for GQA 4 and 8, and bundled with its maps
F="$SRC/recipes/attention/decode_fp8_tma.lua"
"$TUNE" run "$F" --compile-only --arch sm_90a --db f.db --problem b32hq32hkv8d128p16x256 \
  --problem b8hq64hkv8d128p32x1024m1 "${KINDS[@]/#/--only=}" >fp8.txt 2>&1
check "decode_fp8_tma compiles" test $? -eq 0
check "decode_fp8_tma: the space after constraints" contains fp8.txt \
  "attention.decode_fp8_tma: 120 of 216 configs satisfy the constraints"
n_ok=$(sql f.db "select count(*) from results where error_text = 'compile-only' and registers > 0 and spill_stores = 0")
check "decode_fp8_tma: eight compiled results without spills ($n_ok)" test "$n_ok" = 8
bundled attention.decode_fp8_tma f
# decode_fp8's args in its order (the peers draw seq_lens by its index, tools/peers/
# peer_family_kvfp8.py SEQ_LENS_ARG), then the maps
args=$(sql f.bundle "select group_concat(name, ',') from (select a.name from args a join families f on f.id = a.family_id
                     where f.name = 'attention.decode_fp8_tma' order by a.idx)")
want=q,k_cache,v_cache,k_scale,v_scale,block_table,seq_lens,o,partial,B,HQ,HKV,max_pages,page_size
want=$want,q_stride_b,q_stride_h,o_stride_b,o_stride_h,kv_stride_page,kv_stride_row,kv_stride_h,scale_log2,k_map,v_map
check "decode_fp8_tma: decode_fp8's args, then the maps ($args)" test "$args" = "$want"
finish
