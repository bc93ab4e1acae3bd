-- attention/shared/decode.lua: what attention.decode (bf16 KV cache) and attention.decode_fp8 (e4m3
-- KV cache) share: both are templates/attention/decode.cuh with the same serving contract, split
-- and combine kernels, knobs, KV ring and argument list; they differ in the bytes per K/V element
-- and in what follows from it (register budgets, load widths, the fp8 scales). Not a recipe, hence
-- below recipes/<family>/ where only recipes are: each recipe requires it and builds fresh tables
-- from these functions.

local M = {}

M.D = 128            -- head dim the constraints' budgets are written for (D = 64 reads less)
M.COMBINE_WARPS = 4  -- decode.cuh default (one warp per (sequence, query head))

-- K+V bytes one thread holds per tile: the block's tile (BLOCK_N rows of K and of V, D elements of
-- elem_bytes each) spread over WARPS * 32 threads. It does not depend on VEC_BYTES (more lanes per
-- row, fewer rows).
function M.kv_bytes_per_thread(c, elem_bytes)
  return c.BLOCK_N * M.D * elem_bytes * 2 // (c.WARPS * 32)
end

-- Dynamic shared memory of the KV_RING path (decode.cuh kRingBytes): KV_RING tiles of K and V.
function M.ring_bytes(c, elem_bytes)
  return c.KV_RING * c.BLOCK_N * M.D * elem_bytes * 2
end

-- The knobs, in this order: vec_bytes is the VEC_BYTES list, extra the cache-specific knobs tuned
-- after the ring (before the fixed ones).
function M.params(vec_bytes, extra)
  local p = {
    { "SPLITS",    { 1, 2, 4, 8, 16, 32 } },  -- KV chunks per (sequence, head); combine merges them
    { "BLOCK_N",   { 16, 32, 64, 128 } },     -- KV rows per block tile
    { "WARPS",     { 2, 4, 8 } },             -- warps per split-kernel block
    { "VEC_BYTES", vec_bytes },               -- bytes per K/V load per thread
    { "GQA_PACK",  { 1, 0 } },                -- 1: a block serves all query heads of its KV head
    { "STAGES",    { 1, 2 } },                -- 2: tile t+1's loads issued before tile t's math
    -- k >= 2: K/V tiles stream through a k-deep per-thread ring in shared memory (cp.async), k - 1
    -- tiles in flight without holding them in registers; 0: the register path above
    { "KV_RING",   { 0, 2, 3, 4 } },
  }
  for _, e in ipairs(extra or {}) do p[#p + 1] = e end
  -- Fixed knobs, listed so that they are explicit defines; widen to measure them:
  p[#p + 1] = { "KV_HINT",     { 1 } }  -- 1: ld.global.nc.L1::no_allocate; 0 plain, 2 adds .L2::256B
                                        -- (fixed: neither alternative was faster in the check harness)
  p[#p + 1] = { "BLOCK_ORDER", { 1 } }  -- 1: blocks of one head adjacent in launch order, 0: of one
                                        -- split (fixed: it moves single configs either way but not the
                                        -- best one, and {1, 0} nearly doubles the space)
  return p
end

-- The ring: 16-byte cp.async only, no register double buffer; 32..128 bytes per thread per tile
-- (one tile in registers at a time), 128..768 bytes in flight per thread, at most 128 KiB of ring
-- per block, GQA packed (the unpacked blocks read each tile GQA_RATIO times). A deep ring with
-- one block per SM can read faster than the register path (tools/check/run_decode_check.sh).
function M.ring_constraint(elem_bytes)
  return function(c)
    if c.KV_RING == 0 then return true end
    local b = M.kv_bytes_per_thread(c, elem_bytes)
    return c.VEC_BYTES == 16 and c.STAGES == 1 and c.GQA_PACK == 1 and b >= 32 and b <= 128
      and (c.KV_RING - 1) * b >= 128 and (c.KV_RING - 1) * b <= 768
      and M.ring_bytes(c, elem_bytes) <= 128 * 1024
  end
end

-- The problems the family serves: row indices fit int32 (max_pages * page_size), B fits the grid's
-- z (65535), GQA up to 8 query heads per KV head (decode.cuh static_assert); lengths and page size
-- are free. extra: the recipe's own rules, appended.
function M.domain(extra)
  local d = {
    "D == 64 or D == 128",
    "HKV >= 1 and HQ % HKV == 0 and HQ // HKV <= 8",
    "B >= 1 and B <= 65535",
    "page_size >= 1 and max_pages >= 1 and max_pages * page_size <= 2147483647",
  }
  for _, e in ipairs(extra or {}) do d[#d + 1] = e end
  return d
end

-- Two kernels per variant, always both launched; ring_shared is the split kernel's dynamic shared
-- memory (decode.cuh kRingBytes, 0 without the ring).
function M.launch(ring_shared)
  local W = M.COMBINE_WARPS
  return {
    { kernel = "attn_decode_split",
      grid = { "GQA_PACK + (1 - GQA_PACK) * (HQ // HKV)", "SPLITS * HKV", "B" },
      block = { "32 * WARPS", 1, 1 },
      shared = ring_shared },
    { kernel = "attn_decode_combine",
      -- zero blocks (not launched) when SPLITS == 1: the split kernel wrote o
      grid = { "min(SPLITS - 1, 1) * ((B * HQ + " .. W - 1 .. ") // " .. W .. ")", 1, 1 },
      block = { 32 * W, 1, 1 },
      shared = 0 },
  }
end

-- The kernel's arguments (decode.cuh header): q, then kv (the cache tensors and whatever the cache
-- needs, e.g. fp8 scales), then the block table, the lengths (drawn by seq_lens_init), o, the
-- partials and the scalars. q_adversarial is q's second-set data.
function M.args(kv, seq_lens_init, q_adversarial)
  local a = { { "q", tensor = "bf16", shape = { "B", "HQ", "D" }, init = { "normal", 0, 1 },
                adversarial = q_adversarial } }
  for _, e in ipairs(kv) do a[#a + 1] = e end
  local rest = {
    { "block_table", tensor = "i32", shape = { "B", "max_pages" }, init = { "permutation" } },
    { "seq_lens", tensor = "i32", shape = { "B" }, init = seq_lens_init },
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
  }
  for _, e in ipairs(rest) do a[#a + 1] = e end
  return a
end

-- The fp32 reference (templates/attention/reference_decode.cuh); defines is the recipe's function
-- of the problem (a reference table's values are verbatim).
function M.reference(defines)
  return {
    source = "templates/attention/reference_decode.cuh",
    kernel = "attn_decode_reference",
    grid = { "HQ", "B", 1 },
    block = { "D", 1, 1 },
    shared = 0,
    defines = defines,
  }
end

return M
