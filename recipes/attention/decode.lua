-- attention/decode.lua: split-KV decode attention (one query token per sequence) over a paged
-- KV cache, templates/attention/decode.cuh. Memory-bound: the figure of merit is GB/s of K + V read.
--
-- The serving contract (decode.cuh header): per-sequence lengths `seq_lens` in device memory, a
-- block table [B, max_pages], a runtime page size, strided q and o (an engine's q is often a view of
-- its fused QKV projection: q_stride_b = (HQ + 2 * HKV) * D) and strided K/V caches. The tuned
-- problems pass contiguous layouts; tests/gpu/decode_graph_gpu.c runs the strided ones. The grid depends only on B, HQ,
-- HKV and the config, never on the lengths: one CUDA graph replays the step while lengths change.
--
-- Two kernels per variant, always both launched: attn_decode_split (one block per split of one
-- (sequence, KV head) or (sequence, query head)) writes fp32 partials to the `partial` scratch,
-- attn_decode_combine merges them. With SPLITS == 1 the split kernel writes o itself and the combine
-- kernel has a zero grid and is not launched (an empty launch would still add its duration).
--
-- Problems: dims are what stays fixed while an engine replays its decode step (B, HQ, HKV, D,
-- page_size, max_pages); the lengths are inputs. A batch of several sequences draws each length
-- uniformly from 1 .. max_pages * page_size (short and long in one batch), a batch of one is a
-- single sequence of the full length. Every field the runtime needs is an expression, so bundled
-- variants serve untuned problems whose `requires` hold.

local D = 128            -- head dim the constraints' register budgets are written for (D = 64 reads less)
local COMBINE_WARPS = 4  -- decode.cuh default (one warp per (sequence, query head))

-- K+V bytes one thread holds per tile: the block's tile (BLOCK_N rows of K and of V, D bf16 each)
-- spread over WARPS * 32 threads. It does not depend on VEC_BYTES (more lanes per row, fewer rows).
local function kv_bytes_per_thread(c)
  return c.BLOCK_N * D * 2 * 2 // (c.WARPS * 32)
end

-- Dynamic shared memory of the KV_RING path (decode.cuh kRingBytes): KV_RING tiles of K and V.
local function ring_bytes(c)
  return c.KV_RING * c.BLOCK_N * D * 2 * 2
end

local function problem(B, HQ, HKV, Dp, page_size, max_pages)
  return { name = string.format("b%dhq%dhkv%dd%dp%dx%d", B, HQ, HKV, Dp, page_size, max_pages),
           B = B, HQ = HQ, HKV = HKV, D = Dp, page_size = page_size, max_pages = max_pages }
end

return {
  name = "attention.decode",
  template = "templates/attention/decode.cuh",

  params = {
    { "SPLITS",    { 1, 2, 4, 8, 16, 32 } },  -- KV chunks per (sequence, head); combine merges them
    { "BLOCK_N",   { 16, 32, 64, 128 } },     -- KV rows per block tile
    { "WARPS",     { 2, 4, 8 } },             -- warps per split-kernel block
    { "VEC_BYTES", { 16, 8 } },               -- bytes per K/V load per thread
    { "GQA_PACK",  { 1, 0 } },                -- 1: a block serves all query heads of its KV head
    { "STAGES",    { 1, 2 } },                -- 2: tile t+1's loads issued before tile t's math
    -- k >= 2: K/V tiles stream through a k-deep per-thread ring in shared memory (cp.async), k - 1
    -- tiles in flight without holding them in registers; 0: the register path above
    { "KV_RING",   { 0, 2, 3, 4 } },
    -- Fixed knobs, listed so that they are explicit defines; widen to measure them:
    { "KV_HINT",     { 1 } },  -- 1: ld.global.nc.L1::no_allocate; 0 plain, 2 adds .L2::256B
                               -- (fixed: neither alternative was faster in the check harness)
    { "BLOCK_ORDER", { 1 } },  -- 1: blocks of one head adjacent in launch order, 0: of one split
                               -- (fixed: it moves single configs either way but not the best one,
                               -- and {1, 0} nearly doubles the space)
  },

  constraints = {
    -- 64..256 bytes of K/V in flight per thread per tile, at most 256 bytes (64 registers) in all:
    -- fewer starves the memory system, more costs occupancy (GQA_PACK 1: 156-187 registers at 256).
    function(c)
      local b = kv_bytes_per_thread(c)
      if c.KV_RING > 0 then return true end
      return b >= 64 and b * c.STAGES <= 256
    end,
    -- The ring: 16-byte cp.async only, no register double buffer; 32..128 bytes per thread per tile
    -- (one tile in registers at a time), 128..768 bytes in flight per thread, at most 128 KiB of ring
    -- per block, GQA packed (the unpacked blocks read each tile GQA_RATIO times). A deep ring with
    -- one block per SM can read faster than the register path (tools/check/run_decode_check.sh).
    function(c)
      if c.KV_RING == 0 then return true end
      local b = kv_bytes_per_thread(c)
      return c.VEC_BYTES == 16 and c.STAGES == 1 and c.GQA_PACK == 1 and b >= 32 and b <= 128
        and (c.KV_RING - 1) * b >= 128 and (c.KV_RING - 1) * b <= 768
        and ring_bytes(c) <= 128 * 1024
    end,
    -- 8-byte loads are measured at one budget (128 bytes, no prefetch) per WARPS: enough to show
    -- what 16-byte loads buy without doubling the space.
    function(c)
      return c.VEC_BYTES == 16 or (c.STAGES == 1 and kv_bytes_per_thread(c) == 128)
    end,
    -- With one split both block orders launch the same blocks in the same order.
    function(c) return c.BLOCK_ORDER == 1 or c.SPLITS > 1 end,
  },

  -- Compile-time problem constants, as expressions the runtime re-evaluates for a new problem.
  defines = { HEAD_DIM = "D", GQA_RATIO = "HQ // HKV" },

  -- What a config needs to run a problem correctly (decode.cuh static_asserts): whole rows per row
  -- group (a KV row is read by D * 2 / VEC_BYTES lanes, so a block has WARPS * 16 * VEC_BYTES / D
  -- groups). Lengths, page size and strides are free (any length, any page size >= 1).
  requires = {
    "HQ % HKV == 0 and HQ // HKV <= 8",
    "D * 2 // VEC_BYTES <= 32",
    "BLOCK_N % (WARPS * 16 * VEC_BYTES // D) == 0",
  },

  -- The problems the family serves: row indices fit int32 (max_pages * page_size), B fits the
  -- grid's z (65535), GQA up to 8 query heads per KV head (decode.cuh static_assert).
  domain = {
    "D == 64 or D == 128",
    "HKV >= 1 and HQ % HKV == 0 and HQ // HKV <= 8",
    "B >= 1 and B <= 65535",
    "page_size >= 1 and max_pages >= 1 and max_pages * page_size <= 2147483647",
  },
  -- The generic variant: its requires hold for D 64 and 128 and any GQA ratio; 4 splits of each
  -- sequence keep small batches busy without a large merge for big ones.
  fallback = { SPLITS = 4, BLOCK_N = 32, WARPS = 4, VEC_BYTES = 16, GQA_PACK = 1, STAGES = 1, KV_RING = 0,
               KV_HINT = 1, BLOCK_ORDER = 1 },

  problems = {
    problem(32, 32, 8, 128, 16, 256),    -- lengths 1..4096, page 16 (the decoder block's step)
    problem(32, 32, 8, 128, 32, 128),    -- lengths 1..4096, page 32
    problem(1, 32, 8, 128, 16, 2048),    -- one sequence of 32768
    problem(128, 32, 8, 128, 16, 64),    -- lengths 1..1024, large batch
    problem(8, 32, 8, 128, 32, 1024),    -- lengths 1..32768, small batch
    problem(32, 64, 8, 64, 16, 128),     -- D 64, GQA 8, lengths 1..2048
  },

  launch = {
    { kernel = "attn_decode_split",
      grid = { "GQA_PACK + (1 - GQA_PACK) * (HQ // HKV)", "SPLITS * HKV", "B" },
      block = { "32 * WARPS", 1, 1 },
      shared = "KV_RING * BLOCK_N * D * 4" },  -- decode.cuh kRingBytes (0 without the ring)
    { kernel = "attn_decode_combine",
      -- zero blocks (not launched) when SPLITS == 1: the split kernel wrote o
      grid = { "min(SPLITS - 1, 1) * ((B * HQ + " .. COMBINE_WARPS - 1 .. ") // " .. COMBINE_WARPS .. ")", 1, 1 },
      block = { 32 * COMBINE_WARPS, 1, 1 },
      shared = 0 },
  },

  args = {
    { "q", tensor = "bf16", shape = { "B", "HQ", "D" }, init = { "normal", 0, 1 } },
    { "k_cache", tensor = "bf16", shape = { "B * max_pages", "page_size", "HKV", "D" }, init = { "normal", 0, 1 } },
    { "v_cache", tensor = "bf16", shape = { "B * max_pages", "page_size", "HKV", "D" }, init = { "normal", 0, 1 } },
    { "block_table", tensor = "i32", shape = { "B", "max_pages" }, init = { "permutation" } },
    { "seq_lens", tensor = "i32", shape = { "B" },
      init = { "randint", "B == 1 and max_pages * page_size or 1", "max_pages * page_size" } },
    { "o", tensor = "bf16", shape = { "B", "HQ", "D" }, output = true },
    -- acc [B*HQ*SPLITS, D], then m [B*HQ*SPLITS], then l [B*HQ*SPLITS] (decode.cuh header)
    { "partial", tensor = "f32", scratch = true, shape = { "B * HQ * SPLITS * (D + 2)" } },
    { "B", scalar = "i32", value = "B" },
    { "HQ", scalar = "i32", value = "HQ" },
    { "HKV", scalar = "i32", value = "HKV" },
    { "max_pages", scalar = "i32", value = "max_pages" },
    { "page_size", scalar = "i32", value = "page_size" },
    { "q_stride_b", scalar = "i64", value = "HQ * D" },
    { "q_stride_h", scalar = "i64", value = "D" },
    { "o_stride_b", scalar = "i64", value = "HQ * D" },
    { "o_stride_h", scalar = "i64", value = "D" },
    { "kv_stride_page", scalar = "i64", value = "page_size * HKV * D" },
    { "kv_stride_row", scalar = "i64", value = "HKV * D" },
    { "kv_stride_h", scalar = "i64", value = "D" },
    { "scale_log2", scalar = "f32", value = "1.4426950408889634 / sqrt(D)" },
  },

  reference = {
    source = "templates/attention/reference_decode.cuh",
    kernel = "attn_decode_reference",
    grid = { "HQ", "B", 1 },
    block = { "D", 1, 1 },
    shared = 0,
    defines = function(p) return { HEAD_DIM = p.D } end,  -- (a reference table's values are verbatim)
  },

  -- Both sides are fp32 math rounded once to bf16; they differ only where the fp32 results straddle a
  -- bf16 rounding boundary (one bf16 ulp, 2^-8 relative), so rel_l2 is expected far below 1e-3.
  -- With random normal q, k, v an output is a softmax average of ~L/e values: |o| is ~0.05 (L 1024)
  -- to ~0.01 (L 32768) typical and larger for short sequences (up to |v| itself at L = 1), so 1e-2
  -- absolute is a few ulps of the largest outputs.
  tolerance = { rel_l2 = 1e-2, max_abs = 1e-2 },

  metrics = {
    -- K + V of the expected lengths (the mean of the uniform draw, or the full length for B = 1)
    -- read once, q read, o written (block table and partials not counted)
    bytes = "2 * B * (B == 1 and max_pages * page_size or (max_pages * page_size + 1) / 2) * HKV * D * 2"
            .. " + 2 * B * HQ * D * 2",
    flops = "4 * B * HQ * (B == 1 and max_pages * page_size or (max_pages * page_size + 1) / 2) * D",
  },
}
