-- attention/decode.lua: split-KV decode attention (one query token per sequence) over a paged
-- KV cache, templates/attention/decode.cuh. Memory-bound: the figure of merit is GB/s of K + V read.
--
-- Two kernels per variant, always both launched: attn_decode_split (one block per KV chunk of one
-- (sequence, KV head) or (sequence, query head)) writes fp32 partials to the `partial` scratch,
-- attn_decode_combine merges them. With SPLITS == 1 the split kernel writes o itself and the combine
-- kernel has a zero grid and is not launched (an empty launch would still add its duration).
--
-- Contiguous KV is the case page == L (one page per sequence; the block table permutes sequences).

local D = 128            -- head dim of every problem below; the constraints are written for it
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

local function problem(B, HQ, HKV, L, page)
  local tag = page == L and "c" or ("p" .. page)
  return { name = string.format("b%dhq%dhkv%dl%dd%d%s", B, HQ, HKV, L, D, tag),
           B = B, HQ = HQ, HKV = HKV, L = L, D = D, page = page }
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

  defines = function(c, p)
    return { HEAD_DIM = p.D, PAGE_SIZE = p.page, GQA_RATIO = p.HQ // p.HKV }
  end,

  applies = function(c, p)
    if p.D ~= D then return false, "the constraints assume D = " .. D end
    if p.HQ % p.HKV ~= 0 or p.HQ // p.HKV > 8 then return false, "HQ must be HKV * (1..8)" end
    if p.L % p.page ~= 0 then return false, "L is not a multiple of the page size" end
    if p.L % (c.SPLITS * c.BLOCK_N) ~= 0 then return false, "L / SPLITS is not a multiple of BLOCK_N" end
    return true
  end,

  problems = {
    problem(32, 32, 8, 4096, 16),
    problem(32, 32, 8, 4096, 4096),     -- contiguous
    problem(8, 32, 8, 32768, 64),
    problem(8, 32, 8, 32768, 32768),    -- contiguous
    problem(128, 32, 8, 1024, 32),
    problem(128, 32, 8, 1024, 1024),    -- contiguous
  },

  launch = {
    { kernel = "attn_decode_split",
      grid = function(c, p)
        return { c.GQA_PACK == 1 and 1 or p.HQ // p.HKV, c.SPLITS * p.HKV, p.B }
      end,
      block = function(c) return { 32 * c.WARPS, 1, 1 } end,
      shared = function(c) return ring_bytes(c) end },
    { kernel = "attn_decode_combine",
      grid = function(c, p)
        if c.SPLITS == 1 then return { 0, 1, 1 } end  -- not launched: the split kernel wrote o
        return { (p.B * p.HQ + COMBINE_WARPS - 1) // COMBINE_WARPS, 1, 1 }
      end,
      block = { 32 * COMBINE_WARPS, 1, 1 },
      shared = 0 },
  },

  args = {
    { "q", tensor = "bf16", shape = { "B", "HQ", "D" }, init = { "normal", 0, 1 } },
    { "k_cache", tensor = "bf16", init = { "normal", 0, 1 },
      shape = function(p) return { p.B * p.L // p.page, p.page, p.HKV, p.D } end },
    { "v_cache", tensor = "bf16", init = { "normal", 0, 1 },
      shape = function(p) return { p.B * p.L // p.page, p.page, p.HKV, p.D } end },
    { "block_table", tensor = "i32", init = { "permutation" },
      shape = function(p) return { p.B, p.L // p.page } end },
    { "o", tensor = "bf16", shape = { "B", "HQ", "D" }, output = true },
    -- acc [B*HQ*SPLITS, D], then m [B*HQ*SPLITS], then l [B*HQ*SPLITS] (decode.cuh header)
    { "partial", tensor = "f32", scratch = true,
      shape = function(p, c) return { p.B * p.HQ * c.SPLITS * (p.D + 2) } end },
    { "B", scalar = "i32", value = "B" },
    { "HQ", scalar = "i32", value = "HQ" },
    { "HKV", scalar = "i32", value = "HKV" },
    { "L", scalar = "i32", value = "L" },
    { "max_pages_per_seq", scalar = "i32", value = function(p) return p.L // p.page end },
    { "scale_log2", scalar = "f32", value = function(p) return 1.4426950408889634 / math.sqrt(p.D) end },
  },

  reference = {
    source = "templates/attention/reference_decode.cuh",
    kernel = "attn_decode_reference",
    grid = function(p) return { p.HQ, p.B, 1 } end,
    block = function(p) return { p.D, 1, 1 } end,
    shared = 0,
    defines = function(p) return { HEAD_DIM = p.D, PAGE_SIZE = p.page } end,
  },

  -- Both sides are fp32 math rounded once to bf16; they differ only where the fp32 results straddle a
  -- bf16 rounding boundary (one bf16 ulp, 2^-8 relative), so rel_l2 is expected far below 1e-3.
  -- With random normal q, k, v an output is a softmax average of ~L/e values: |o| is ~0.05 (L 1024)
  -- to ~0.01 (L 32768) typical, ~0.3 at most, so 1e-2 absolute is ~10 ulps of the largest outputs
  -- while 5e-2 would exceed most outputs themselves.
  tolerance = { rel_l2 = 1e-2, max_abs = 1e-2 },

  metrics = {
    -- K + V read once, q read, o written (block table and partials not counted)
    bytes = function(p) return 2 * p.B * p.L * p.HKV * p.D * 2 + 2 * p.B * p.HQ * p.D * 2 end,
    flops = function(p) return 4 * p.B * p.HQ * p.L * p.D end,
  },
}
