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
--   engine's fused QKV projection (q_ld = k_ld = v_ld = (HQ + 2 HKV) D) needs no copy on the
--   cp.async producer (USE_TMA = 0). Strides and pointers must be multiples of 8 elements.
--   USE_TMA = 1 reads q, k, v through 4-D maps {D, heads, T, 1} whose token stride must equal the
--   row stride (the tuned problems pass contiguous rows; a caller with a fused QKV buffer builds the
--   maps over that buffer with its stride): loads that cross into the next sequence are masked,
--   rows past T read as zeros; T must be at least the tile rows.
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

-- Query heads per tile row group, tiles of the grid (an upper bound) and head blocks.
local G = "(GQA_PACK * (HQ // HKV - 1) + 1)"
local TILES = "(T * " .. G .. " // (64 * CONSUMERS) + B)"
local HEADS = "(HQ // " .. G .. ")"
-- Dynamic shared memory (prefill_sm90.cuh kSmemBytes, PERSISTENT = 0): alignment slack, the Q tile,
-- STAGES K and V tiles, 1 + 4 * STAGES mbarriers, the block's work (16 bytes).
local SMEM = "(1024 + (64 * CONSUMERS + 2 * STAGES * BLOCK_N) * D * 2 + (1 + 4 * STAGES) * 8 + 16)"

local function problem(B, T, HQ, HKV, D, causal)
  return { name = string.format("b%dt%dhq%dkv%dd%d%s", B, T, HQ, HKV, D, causal and "c" or ""),
           B = B, T = T, HQ = HQ, HKV = HKV, D = D, causal = causal }
end

return {
  name = "attention.varlen",
  template = "templates/attention/prefill_sm90.cuh",
  kernel = "attn_varlen_sm90",

  params = {
    { "BLOCK_N",   { 64, 128, 176 } },  -- keys per K/V tile (n of the Q K^T wgmma)
    { "CONSUMERS", { 1, 2 } },          -- consumer warpgroups; query rows per tile = 64 * CONSUMERS
    { "STAGES",    { 2, 3 } },          -- K/V ring depth
    { "OVERLAP",   { 0, 1 } },          -- 1: Q K_{j+1}^T and P_j V_j in flight together (FA3 style)
    -- tile order: 0 sequence by sequence, 1 the last (longest causal) tile of each sequence first,
    -- 2 the highest tile index of the whole batch first (heaviest causal work first), heads fastest
    { "SCHED",     { 0, 1, 2 } },
    { "PINGPONG",  { 0, 1 } },          -- 1: consumer warpgroups take turns issuing wgmma (FA3 schedule)
    { "USE_TMA",   { 0, 1 } },          -- 1: TMA producer (one thread), 0: cp.async (any row stride)
    { "MIN_BLOCKS", { 1, 2 } },         -- 2 (one consumer warpgroup, TMA): two blocks per SM
    { "LEAN_PRODUCER", { 0, 1 } },      -- 1: the producer is one warp (MIN_BLOCKS 2 only)
    { "GQA_PACK",  { 0, 1 } },          -- 1: a tile packs the query heads of one KV head
  },

  constraints = {
    "PINGPONG == 0 or (OVERLAP == 1 and CONSUMERS >= 2)",
    -- not overlapped: only the lean two-blocks-per-SM shape, where it compiled without spills in
    -- prefill_sm90 (the other shapes won overlapped there)
    "OVERLAP == 1 or (MIN_BLOCKS == 2 and LEAN_PRODUCER == 1)",
    -- one block per SM: two consumer warpgroups; two per SM: one consumer warpgroup and the TMA
    -- producer, lean up to BLOCK_N 128 (prefill_sm90's register budgets)
    "(MIN_BLOCKS == 1 and LEAN_PRODUCER == 0 and CONSUMERS == 2) or (MIN_BLOCKS == 2 and CONSUMERS == 1 and "
      .. "USE_TMA == 1 and ((LEAN_PRODUCER == 1 and BLOCK_N <= 128) or (LEAN_PRODUCER == 0 and OVERLAP == 1)))",
    -- the cp.async producer (the strided-view path) with a 2-deep ring; 3 stages at BLOCK_N 128 only
    "USE_TMA == 1 or STAGES == 2",
    "STAGES == 2 or BLOCK_N == 128",
  },

  -- What a config needs to run a problem (prefill_sm90.cuh static_asserts, the SM's shared memory).
  requires = {
    "HQ % HKV == 0",
    "causal or SCHED == 0",  -- SCHED only reorders causal work
    "GQA_PACK == 0 or (HQ > HKV and 64 % (HQ // HKV) == 0)",
    "USE_TMA == 0 or T >= max(BLOCK_N, 64 * CONSUMERS)",  -- a box no larger than the tensor
    SMEM .. " <= 227 * 1024",
    "MIN_BLOCKS * (" .. SMEM .. " + 1024) <= 228 * 1024",  -- each block also holds 1 KiB of the system's
  },

  defines = { HEAD_DIM = "D", IS_CAUSAL = "causal", TMA_ARGS = 1, VARLEN = 1,
              GQA_RATIO = "GQA_PACK * (HQ // HKV)" },  -- 0 unless packed: one binary for every ratio

  -- The problems the family serves: the grid's blocks and token indices fit int32, heads fit grid.y.
  domain = {
    "D == 64 or D == 128",
    "HKV >= 1 and HQ % HKV == 0 and HQ <= 65535",
    "B >= 1 and T >= B",
    "(T // 64 + B) * HQ <= 2147483647",
  },
  -- The generic variant: the cp.async producer (any T, any row stride), no packing, every D and GQA
  -- ratio, sequence order (causal or not).
  fallback = { BLOCK_N = 128, CONSUMERS = 2, STAGES = 2, OVERLAP = 1, SCHED = 0, PINGPONG = 1, USE_TMA = 0,
               MIN_BLOCKS = 1, LEAN_PRODUCER = 0, GQA_PACK = 0 },

  problems = {
    problem(64, 16384, 32, 8, 128, true),   -- many short and a few long sequences
    problem(16, 32768, 32, 8, 128, true),   -- fewer, longer sequences
    problem(256, 8192, 32, 8, 128, true),   -- short-sequence prefill at large batch (mean 32 tokens)
    problem(128, 512, 32, 8, 128, true),    -- mostly 1..4 tokens: tails below one tile everywhere
    problem(32, 8192, 16, 16, 64, true),    -- D 64, no GQA
    problem(32, 16384, 32, 8, 128, false),  -- not causal
  },

  launch = {
    grid = { "SCHED == 2 and " .. TILES .. " * " .. HEADS .. " or " .. TILES, "SCHED == 2 and 1 or " .. HEADS, 1 },
    block = { "128 * CONSUMERS + 128 - 96 * LEAN_PRODUCER", 1, 1 },
    shared = SMEM,
  },

  args = {
    { "q", tensor = "bf16", shape = { "T", "HQ", "D" },  init = { "normal", 0, 1 } },
    { "k", tensor = "bf16", shape = { "T", "HKV", "D" }, init = { "normal", 0, 1 } },
    { "v", tensor = "bf16", shape = { "T", "HKV", "D" }, init = { "normal", 0, 1 } },
    { "o", tensor = "bf16", shape = { "T", "HQ", "D" },  output = true },
    { "cu_seqlens", tensor = "i32", shape = { "B + 1" }, init = { "offsets", "T", 1 } },
    { "B",   scalar = "i32", value = "B" },
    { "T",   scalar = "i32", value = "T" },
    { "HQ",  scalar = "i32", value = "HQ" },
    { "HKV", scalar = "i32", value = "HKV" },
    -- row (token) strides in elements: contiguous here; an engine passes its own
    { "q_ld", scalar = "i64", value = "HQ * D" },
    { "k_ld", scalar = "i64", value = "HKV * D" },
    { "v_ld", scalar = "i64", value = "HKV * D" },
    { "o_ld", scalar = "i64", value = "HQ * D" },
    -- softmax(x * scale) is computed as 2^(x * scale * log2 e); scale = 1 / sqrt(D)
    { "scale_log2", scalar = "f32", value = "1.4426950408889634 / sqrt(D)" },
    -- 4-D maps {D, heads, T, 1} with the row strides above, 128-byte swizzle, box {64 columns, heads,
    -- rows, 1}: the Q box holds G heads of BLOCK_M / G tokens (GQA_PACK), K and V one head of BLOCK_N
    -- tokens. Variants without USE_TMA get maps too (every kernel takes them), rows clipped to T.
    { "tmQ", tensormap = { tensor = "q", swizzle = 128, dims = { "D", "HQ", "T", 1 },
      strides = { "D * 2", "HQ * D * 2", "T * HQ * D * 2" },
      box = { 64, G, "max(1, min(64 * CONSUMERS // " .. G .. ", T + USE_TMA * 64 * CONSUMERS))", 1 } } },
    { "tmK", tensormap = { tensor = "k", swizzle = 128, dims = { "D", "HKV", "T", 1 },
      strides = { "D * 2", "HKV * D * 2", "T * HKV * D * 2" },
      box = { 64, 1, "min(BLOCK_N, T + USE_TMA * BLOCK_N)", 1 } } },
    { "tmV", tensormap = { tensor = "v", swizzle = 128, dims = { "D", "HKV", "T", 1 },
      strides = { "D * 2", "HKV * D * 2", "T * HKV * D * 2" },
      box = { 64, 1, "min(BLOCK_N, T + USE_TMA * BLOCK_N)", 1 } } },
  },

  reference = {
    source = "templates/attention/reference_varlen.cuh",
    kernel = "attn_varlen_reference",
    grid = { "(T + 127) // 128", "HQ", 1 },
    block = { 128, 1, 1 },
    shared = 0,
    defines = function(p) return { HEAD_DIM = p.D, IS_CAUSAL = p.causal, REF_TMA_ARGS = 1 } end,
  },

  -- as attention/prefill_sm90.lua: bf16 output and P rounded to bf16 before P V
  tolerance = { rel_l2 = 2e-2, max_abs = 5e-2 },

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
