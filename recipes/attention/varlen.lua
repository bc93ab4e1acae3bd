-- attention/varlen.lua: attention forward (prefill) over packed variable-length sequences, the
-- Hopper path: templates/attention/prefill_sm90.cuh with VARLEN = 1 (entry attn_varlen_sm90, the
-- same producer/consumer mainloop as attention.prefill_sm90). sm_90a only.
--
-- The serving contract (FlashAttention's varlen API):
--   q [T, HQ, D], k and v [T, HKV, D], o [T, HQ, D] bf16, T tokens of B sequences packed back to
--   back; cu_seqlens i32 [B + 1], sequence b = tokens [cu_seqlens[b], cu_seqlens[b + 1]), the same
--   for queries and keys (self-attention prefill; chunked prefill with longer keys is not covered),
--   causal within each sequence, GQA (query head h reads KV head h / (HQ / HKV)), D 64 or 128,
--   any length >= 1 (tails masked; a length below one tile is fine).
--   Row (token) strides q_ld, k_ld, v_ld, o_ld (i64, elements; heads are D apart): a view of an
--   engine's fused QKV projection (q_ld = k_ld = v_ld = (HQ + 2 HKV) D) needs no copy on either
--   producer. Strides and pointers must be multiples of 8 elements (16 bytes).
--   USE_TMA = 1 reads q, k, v through 4-D maps {D, heads, T, 1} whose token strides are q_ld, k_ld
--   and v_ld (shared/varlen.lua): the tuned problems pass contiguous rows, and libtunert builds the
--   maps over a caller's strided view from the row strides it passes (bundle format 1.6). Loads
--   that cross into the next sequence are masked, rows past T read as zeros; T must be at least
--   the tile rows.
--   The grid depends on T, B and the heads only, never on the lengths (one CUDA graph replays it
--   while the lengths change): TILES = T * G // (64 * CONSUMERS) + B, an upper bound on the query
--   tiles of all sequences; each block maps its index to (sequence, tile) from cu_seqlens with a
--   warp scan and exits past the last tile.
-- Tuned: tile shapes and pipeline as prefill_sm90 (pruned to the configurations that won there and
-- the several-blocks-per-SM ones, which suit short sequences), the tile order (SCHED) and GQA_PACK
-- (a tile packs the G = HQ / HKV query heads of one KV head: short sequences fill G times more of
-- a tile, K/V are read once per G heads).
-- Problems draw cu_seqlens with the "offsets" init: B lengths >= 1 summing to T, most short and a
-- few long (tuner/inputs.c), so one batch mixes short and long sequences.

local common = require "attention.shared.varlen"
-- Dynamic shared memory with the block's work record of 16 bytes (prefill_sm90.cuh kSmemBytes).
local SMEM = common.smem(16)

local function problem(B, T, HQ, HKV, D, causal)
  return { name = string.format("b%dt%dhq%dkv%dd%d%s", B, T, HQ, HKV, D, causal and "c" or ""),
           B = B, T = T, HQ = HQ, HKV = HKV, D = D, causal = causal }
end

return {
  name = "attention.varlen",
  template = "templates/attention/prefill_sm90.cuh",
  kernel = "attn_varlen_sm90",

  -- the space and constraints: shared/varlen.lua
  params = common.params(),
  constraints = common.constraints(),

  -- What a config needs to run a problem (shared/varlen.lua); a TMA box is no larger than its tensor.
  requires = common.requires("USE_TMA == 0 or T >= max(BLOCK_N, 64 * CONSUMERS)", SMEM),

  defines = common.defines(),

  -- The problems the family serves: the grid's blocks and token indices fit int32, heads fit grid.y.
  domain = common.domain({ "B >= 1 and T >= B", "(T // 64 + B) * HQ <= 2147483647" }),
  -- The generic variant (shared/varlen.lua): the cp.async producer, no packing.
  fallback = common.fallback(),

  problems = {
    problem(64, 16384, 32, 8, 128, true),   -- many short and a few long sequences
    problem(16, 32768, 32, 8, 128, true),   -- fewer, longer sequences
    problem(256, 8192, 32, 8, 128, true),   -- short-sequence prefill at large batch (mean 32 tokens)
    problem(128, 512, 32, 8, 128, true),    -- mostly 1..4 tokens: tails below one tile everywhere
    problem(32, 8192, 16, 16, 64, true),    -- D 64, no GQA
    problem(32, 16384, 32, 8, 128, false),  -- not causal
  },

  launch = common.launch("T", SMEM),

  args = common.args("T", "T", {
    { "cu_seqlens", tensor = "i32", shape = { "B + 1" }, init = { "offsets", "T", 1 } },
  },
  -- second set: q, k of std 5 give logits of std 25 (one dominant key): exp overflows unless the max is subtracted
  { q = { "normal", 0, 5 }, k = { "normal", 0, 5 } }),

  reference = common.reference("attn_varlen_reference", "T",
    function(p) return { HEAD_DIM = p.D, IS_CAUSAL = p.causal, REF_TMA_ARGS = 1 } end),

  tolerance = common.tolerance(),

  metrics = {
    -- The lengths are drawn per run, so flops use their expectation under the offsets init
    -- (tuner/inputs.c: length = 1 + (T - B) u^3 / sum u^3, u uniform; E[u^3] = 1/4, E[u^6] = 1/7):
    -- sum of len^2 ~ 16 (T - B)^2 / (7 B) + 2 (T - B) + B. The draw of one seed differs from it
    -- (most for small B), so TFLOP/s are estimates; compare times, or bytes, which are exact.
    -- Two matmuls of 2 len^2 D per sequence and query head; causal does half.
    flops = "4 * HQ * D * (16 * (T - B) ^ 2 / (7 * B) + 2 * (T - B) + B) / (causal and 2 or 1)",
    -- q, k, v read once, o written
    bytes = "2 * T * D * (2 * HQ + 2 * HKV)",
  },
}
