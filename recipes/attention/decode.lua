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

local common = require "attention.shared.decode"
local KV_BYTES = 2  -- bf16 K and V

local function kv_bytes_per_thread(c) return common.kv_bytes_per_thread(c, KV_BYTES) end

local function problem(B, HQ, HKV, Dp, page_size, max_pages)
  return { name = string.format("b%dhq%dhkv%dd%dp%dx%d", B, HQ, HKV, Dp, page_size, max_pages),
           B = B, HQ = HQ, HKV = HKV, D = Dp, page_size = page_size, max_pages = max_pages }
end

return {
  name = "attention.decode",
  template = "templates/attention/decode.cuh",

  -- shared/decode.lua's knobs (it says what each does), 16- and 8-byte K/V loads; MMA 1: q . k and P V
  -- on bf16 tensor cores (templates/attention/decode_mma.cuh), which take the per-head FMAs and score
  -- shuffles off the CUDA cores where several query heads share a KV head
  params = common.params({ 16, 8 }, { { "MMA", { 0, 1 } } }),

  constraints = {
    -- 64..256 bytes of K/V in flight per thread per tile, at most 256 bytes (64 registers) in all:
    -- fewer starves the memory system, more costs occupancy (GQA_PACK 1: 156-187 registers at 256).
    -- MMA 1 holds K/V as mma fragments with no fp32 copies: twice that, 512 bytes in all.
    function(c)
      local b = kv_bytes_per_thread(c)
      if c.KV_RING > 0 then return true end
      if c.MMA == 1 then return b * c.STAGES <= 512 end
      return b >= 64 and b * c.STAGES <= 256
    end,
    -- The ring (shared/decode.lua says why these bounds); MMA 1 with up to 256 bytes per tile (its
    -- 16-key steps per warp make a tile 256 bytes per lane at head dim 128).
    function(c)
      if c.MMA == 0 or c.KV_RING == 0 then return common.ring_constraint(KV_BYTES)(c) end
      local b = kv_bytes_per_thread(c)
      return c.STAGES == 1 and b <= 256 and (c.KV_RING - 1) * b <= 768 and common.ring_bytes(c, KV_BYTES) <= 128 * 1024
    end,
    -- 8-byte loads are measured at one budget (128 bytes, no prefetch) per WARPS: enough to show
    -- what 16-byte loads buy without doubling the space.
    function(c)
      return c.VEC_BYTES == 16 or (c.STAGES == 1 and kv_bytes_per_thread(c) == 128)
    end,
    -- With one split both block orders launch the same blocks in the same order.
    function(c) return c.BLOCK_ORDER == 1 or c.SPLITS > 1 end,
    -- The tensor-core path reads 16-byte chunks of a row per lane, all query heads of a KV head in
    -- one block, in 16-key steps per warp (decode_mma.cuh); the register and ring budgets above hold
    -- for it too (a lane holds the same bytes per tile).
    "MMA == 0 or (VEC_BYTES == 16 and GQA_PACK == 1 and BLOCK_N % (16 * WARPS) == 0)",
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

  -- The problems the family serves (shared/decode.lua): lengths and page size are free.
  domain = common.domain(),
  -- The generic variant: its requires hold for D 64 and 128 and any GQA ratio; 4 splits of each
  -- sequence keep small batches busy without a large merge for big ones.
  fallback = { SPLITS = 4, BLOCK_N = 32, WARPS = 4, VEC_BYTES = 16, GQA_PACK = 1, STAGES = 1, KV_RING = 0,
               MMA = 0, KV_HINT = 1, BLOCK_ORDER = 1 },

  problems = {
    problem(32, 32, 8, 128, 16, 256),    -- lengths 1..4096, page 16 (the decoder block's step)
    problem(32, 32, 8, 128, 32, 128),    -- lengths 1..4096, page 32
    problem(1, 32, 8, 128, 16, 2048),    -- one sequence of 32768
    problem(128, 32, 8, 128, 16, 64),    -- lengths 1..1024, large batch
    problem(8, 32, 8, 128, 32, 1024),    -- lengths 1..32768, small batch
    problem(32, 64, 8, 64, 16, 128),     -- D 64, GQA 8, lengths 1..2048
  },

  -- decode.cuh kRingBytes (0 without the ring): KV_RING tiles of K and V, 2 bytes per element
  launch = common.launch("KV_RING * BLOCK_N * D * 4"),

  -- Second input set (adversarial): q and k of std 5 give logits q.k/sqrt(D) of std 25, rows of one
  -- dominant key whose exp overflows fp32 unless the running max is subtracted first; o is then about
  -- that key's v row, so v is drawn at std 1/8, where one bf16 ulp of |o| stays under max_abs.
  args = common.args({
    { "k_cache", tensor = "bf16", shape = { "B * max_pages", "page_size", "HKV", "D" }, init = { "normal", 0, 1 },
      adversarial = { "normal", 0, 5 } },
    { "v_cache", tensor = "bf16", shape = { "B * max_pages", "page_size", "HKV", "D" }, init = { "normal", 0, 1 },
      adversarial = { "normal", 0, 0.125 } },
  }, { "randint", "B == 1 and max_pages * page_size or 1", "max_pages * page_size" }, { "normal", 0, 5 }),

  reference = common.reference(function(p) return { HEAD_DIM = p.D } end),

  -- Both sides are fp32 math rounded once to bf16; they differ only where the fp32 results straddle a
  -- bf16 rounding boundary (one bf16 ulp, 2^-8 relative), so rel_l2 is expected far below 1e-3.
  -- With random normal q, k, v an output is a softmax average of ~L/e values: |o| is ~0.05 (L 1024)
  -- to ~0.01 (L 32768) typical and larger for short sequences (up to |v| itself at L = 1), so 1e-2
  -- absolute is a few ulps of the largest outputs. The second set's rows are near one-hot, |o| ~ |v|
  -- < 1 (v of std 1/8), where one ulp is at most 2^-8. honest: P stays fp32 here, so a correct
  -- variant sits far below the error of one rounding; bf16 partials of the split-KV sums would not.
  tolerance = { rel_l2 = 1e-2, max_abs = 1e-2, honest = 1.25 },

  metrics = {
    -- K + V of the expected lengths (the mean of the uniform draw, or the full length for B = 1)
    -- read once, q read, o written (block table and partials not counted)
    bytes = "2 * B * (B == 1 and max_pages * page_size or (max_pages * page_size + 1) / 2) * HKV * D * 2"
            .. " + 2 * B * HQ * D * 2",
    flops = "4 * B * HQ * (B == 1 and max_pages * page_size or (max_pages * page_size + 1) / 2) * D",
  },
}
