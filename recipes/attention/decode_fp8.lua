-- attention/decode_fp8.lua: split-KV decode attention over a paged fp8 e4m3 KV cache with per-head
-- f32 scales (vLLM's and FlashInfer's k_scale / v_scale), bf16 q and o: templates/attention/decode.cuh
-- with KV_FP8 1. Memory-bound: the figure of merit is GB/s of K + V read, half the bytes per token
-- of attention.decode's bf16 cache, so the step should approach twice as fast at long context.
--
-- The serving contract is attention.decode's (decode.cuh header): seq_lens in device memory, a block
-- table, a runtime page size, strided q, o and caches, a grid that depends only on B, HQ, HKV and
-- the config (one CUDA graph replays the step while lengths change), the same split and combine
-- kernels. Two arguments more, after v_cache: k_scale and v_scale, f32. The dim kv_scale says how
-- they are laid out: "head", [1, HKV] (one scale per KV head, vLLM's and FlashInfer's; a per-tensor
-- scale is HKV equal values), or "page", [num_pages, HKV] (one per page and KV head, indexed by the
-- block table's page numbers: a cache quantized page by page as it fills). The cache holds k / scale
-- and v / scale; the kernel dequantizes in registers. Per head, it folds k_scale into q's
-- pre-scaling and v_scale into each split's output, exactly; per page, a key's K scale multiplies
-- its score and its V scale its weight (decode.cuh header, KV_SCALE_PAGE).
--
-- Tuned besides decode's knobs: DEQUANT, the e4m3 -> fp32 conversion (the hardware cvt or integer bit
-- moves; decode.cuh header), and 4-byte loads (a 128-wide row of e4m3 is 128 bytes, one warp's 4-byte
-- loads).
--
-- Problems: dims are what stays fixed while an engine replays its decode step (B, HQ, HKV, D,
-- page_size, max_pages) and min_len: lengths are drawn uniformly from min_len .. max_pages *
-- page_size (min_len = the full length: every sequence as long, a single long sequence; min_len 1:
-- short and long in one batch) and kv_scale. Llama-3-8B (HQ 32) and 70B (HQ 64) head layouts,
-- HKV 8, D 128.

local common = require "attention.shared.decode"
local D = common.D
local KV_BYTES = 1  -- e4m3 K and V

local function kv_bytes_per_thread(c) return common.kv_bytes_per_thread(c, KV_BYTES) end

local function problem(B, HQ, HKV, page_size, max_pages, min_len, kv_scale)
  local L = max_pages * page_size
  kv_scale = kv_scale or "head"
  return { name = string.format("b%dhq%dhkv%dd%dp%dx%d%s%s", B, HQ, HKV, D, page_size, max_pages,
                                min_len == L and "" or ("m" .. min_len), kv_scale == "head" and "" or "_pagescale"),
           B = B, HQ = HQ, HKV = HKV, D = D, page_size = page_size, max_pages = max_pages, min_len = min_len,
           kv_scale = kv_scale }
end

-- rows of k_scale and v_scale: one per page, or one for every page
local SCALE_ROWS = "kv_scale == 'page' and B * max_pages or 1"

-- dynamic shared memory of the ring (decode.cuh kRingBytes, decode_mma.cuh's ring): K/V at 1 byte
-- per element, then per page scales a K and a V scale per row and lane that reads the row (the
-- tensor-core path: 4 lanes per row; the row-group path: D // VEC_BYTES)
local RING_SHARED = "KV_RING * BLOCK_N * D * 2 + (kv_scale == 'page' and KV_RING * BLOCK_N * 8 * "
  .. "(MMA == 1 and 4 or D // VEC_BYTES) or 0)"

return {
  name = "attention.decode_fp8",
  template = "templates/attention/decode.cuh",

  -- shared/decode.lua's knobs (it says what each does); 4-byte loads too (a 128-wide e4m3 row is
  -- one warp's 4-byte loads), and the e4m3 -> fp32 (MMA 1: fp16)
  -- conversion: 0 cvt.rn.f16x2.e4m3x2, 1 bit moves; MMA 1: q . k and P V on fp16 tensor cores
  -- (templates/attention/decode_mma.cuh), which take the per-head FMAs and score shuffles off the
  -- CUDA cores where several query heads share a KV head
  params = common.params({ 16, 8, 4 }, { { "DEQUANT", { 0, 1 } }, { "MMA", { 0, 1 } } }),

  constraints = {
    -- Register path: 32..256 bytes of K/V in flight per thread per tile, at most 256 in all. The
    -- lower bound is half of decode's 64: a thread's bytes are a quarter as many registers once
    -- dequantized to fp32 as bf16's are half, so the same fp32 working set holds twice the bytes.
    function(c)
      if c.KV_RING > 0 then return true end
      local b = kv_bytes_per_thread(c)
      return b >= 32 and b * c.STAGES <= 256
    end,
    -- The ring, as decode's (shared/decode.lua).
    common.ring_constraint(KV_BYTES),
    -- 4-byte loads at one budget (64 bytes per tile, no prefetch) per WARPS: enough to show what
    -- the wider loads buy.
    function(c)
      return c.VEC_BYTES ~= 4 or (c.STAGES == 1 and kv_bytes_per_thread(c) == 64)
    end,
    -- The bit-move conversion on the plain register path only (no prefetch, no ring): it changes
    -- the arithmetic per byte, which those two do not; a pipelined variant uses the hardware cvt.
    "DEQUANT == 0 or (STAGES == 1 and KV_RING == 0)",
    -- The tensor-core path reads 16-byte chunks of a row per lane, all query heads of a KV head in
    -- one block, in 16-key steps per warp (decode_mma.cuh); the register and ring budgets above hold
    -- for it too (a lane holds the same bytes per tile).
    "MMA == 0 or (VEC_BYTES == 16 and GQA_PACK == 1 and BLOCK_N % (16 * WARPS) == 0)",
  },

  -- Compile-time problem constants, as expressions the runtime re-evaluates for a new problem.
  defines = { HEAD_DIM = "D", GQA_RATIO = "HQ // HKV", KV_FP8 = "1", KV_SCALE_PAGE = "kv_scale == 'page' and 1 or 0" },

  -- What a config needs to run a problem (decode.cuh static_asserts): a KV row of D bytes is read
  -- by D // VEC_BYTES lanes, so a block has WARPS * 32 * VEC_BYTES // D row groups, and BLOCK_N must
  -- be a multiple of them.
  requires = {
    "HQ % HKV == 0 and HQ // HKV <= 8",
    "D // VEC_BYTES <= 32",
    "BLOCK_N % (WARPS * 32 * VEC_BYTES // D) == 0",
  },

  -- The problems the family serves, as decode's (shared/decode.lua; K/V strides are multiples of
  -- 16 elements for every D here), and the shortest drawn length within the longest.
  domain = common.domain({ "min_len >= 0 and min_len <= max_pages * page_size",
                           "kv_scale == 'head' or kv_scale == 'page'" }),
  -- The generic variant: its requires hold for D 64 and 128 and any GQA ratio (8-byte loads: 8 or
  -- 16 lanes per row), 4 splits as decode's fallback.
  fallback = { SPLITS = 4, BLOCK_N = 64, WARPS = 4, VEC_BYTES = 8, GQA_PACK = 1, STAGES = 1, KV_RING = 0,
               DEQUANT = 0, MMA = 0, KV_HINT = 1, BLOCK_ORDER = 1 },

  problems = {
    problem(1, 32, 8, 16, 2048, 32768),     -- one sequence of 32768 (8B), page 16
    problem(1, 64, 8, 32, 4096, 131072),    -- one sequence of 131072 (70B), page 32: splits
    problem(32, 32, 8, 16, 256, 4096),      -- 32 sequences of 4096 (8B)
    problem(128, 32, 8, 32, 64, 2048),      -- 128 sequences of 2048 (8B), page 32
    problem(64, 64, 8, 16, 512, 8192),      -- 64 sequences of 8192 (70B)
    problem(32, 32, 8, 16, 512, 1),         -- mixed lengths 1..8192 (8B)
    problem(8, 64, 8, 32, 1024, 1),         -- mixed lengths 1..32768 (70B)
    -- per-page scales: tiles inside a page and straddling pages (page 16 < BLOCK_N), mixed lengths
    problem(1, 32, 8, 16, 2048, 32768, "page"),
    problem(32, 32, 8, 16, 256, 4096, "page"),
    problem(8, 64, 8, 32, 1024, 1, "page"),
  },

  launch = common.launch(RING_SHARED),

  -- K/V: e4m3 of a wide normal (std 32 of the 448 range; clamped values are 14 std away), so the
  -- cache holds subnormals to hundreds. Scales make the logits large: q . k * k_scale / sqrt(D) has
  -- std 32 * k_scale = 1.6 .. 4.8 per head (a long sequence's largest logits are 15 .. 20 above
  -- the mean); dequantized V has std 0.3 .. 1 and |v| <= 448 * 0.03 = 13.4.
  -- Second input set (adversarial): q of std 5 and K of std 100 (448, the e4m3 limit the host clamps
  -- to, is 4.5 std away) give logits of std 500 * k_scale = 25 .. 75 on every head: exp overflows
  -- fp32 unless the running max is subtracted first. V keeps its init (|o| <= 13.4 either way).
  args = common.args({
    { "k_cache", tensor = "e4m3", shape = { "B * max_pages", "page_size", "HKV", "D" }, init = { "normal", 0, 32 },
      adversarial = { "normal", 0, 100 } },
    { "v_cache", tensor = "e4m3", shape = { "B * max_pages", "page_size", "HKV", "D" }, init = { "normal", 0, 32 } },
    { "k_scale", tensor = "f32", shape = { SCALE_ROWS, "HKV" }, init = { "uniform", 0.05, 0.15 } },
    { "v_scale", tensor = "f32", shape = { SCALE_ROWS, "HKV" }, init = { "uniform", 0.01, 0.03 } },
  }, { "randint", "min_len", "max_pages * page_size" }, { "normal", 0, 5 }),

  reference = common.reference(function(p)
    return { HEAD_DIM = p.D, KV_FP8 = 1, KV_SCALE_PAGE = p.kv_scale == "page" and 1 or 0 }
  end),

  -- Both sides compute on the same values: e4m3 -> fp16 -> fp32 is exact, and the scales enter as
  -- one fp32 product each (folded in the kernel, per element in the reference: relative differences
  -- of a few 2^-24, |s| <= ~40 in log2 units, so the weights differ by ~1e-5 relative). Both round
  -- fp32 results once to bf16: they differ where the fp32 values straddle a rounding boundary (one
  -- bf16 ulp, 2^-8 relative), so rel_l2 is expected far below 1e-3 (decode.lua's 1e-2 kept). An output
  -- is a convex combination of dequantized V rows, |o| <= 13.4 < 16, where one bf16 ulp is 2^-4:
  -- max_abs 7e-2 is that ulp with room for the fp32 differences.
  tolerance = { rel_l2 = 1e-2, max_abs = 7e-2 },

  metrics = {
    -- K + V of the expected lengths (the mean of the uniform draw min_len .. max_pages * page_size)
    -- read once at 1 byte per element, q read, o written (scales, block table and partials not counted)
    bytes = "2 * B * (min_len + max_pages * page_size) / 2 * HKV * D + 2 * B * HQ * D * 2",
    flops = "4 * B * HQ * (min_len + max_pages * page_size) / 2 * D",
  },
}
