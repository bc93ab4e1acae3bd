-- attention/decode_fp8_tma.lua: attention.decode_fp8 (recipes/attention/decode_fp8.lua: the same
-- serving contract, inputs, reference and tolerance) with attention.decode_tma's split kernel: one
-- producer warp per block fills a KV_RING-deep ring of e4m3 K/V tiles by bulk tensor copies
-- (templates/attention/decode_tma.cuh), the consumer warps dequantize them from shared memory into
-- the fp16 tensor-core path (decode_mma.cuh). A family of its own for the same reason as
-- attention.decode_tma: two more kernel arguments, the caches' tensor maps.
--
-- Per-head scales only (kv_scale "head"): a page's scales would have to travel in the ring beside
-- its rows, which the producer does not copy. The maps describe the cache as packed [B * max_pages]
-- [page_size][HKV][D]; another layout or a larger pool is read through cp.async by the producer, so
-- every variant serves attention.decode_fp8's whole per-head contract. The dim `layout` says which
-- strides a problem passes: "nhd" the packed ones (decode_fp8's problems), "hnd" FlashInfer's
-- [page][HKV][page_size][D] (one problem, which the producer reads through cp.async).

local base = require "attention.decode_fp8"
local common = require "attention.shared.decode"

local function copy(t)
  local c = {}
  for k, v in pairs(t) do c[k] = v end
  return c
end

local recipe = copy(base)
recipe.name = "attention.decode_fp8_tma"

recipe.params = {
  { "SPLITS",   { 1, 2, 4, 8, 16, 32 } },  -- KV chunks per (sequence, KV head)
  { "BLOCK_N",  { 32, 64, 128 } },         -- keys per tile (one ring slot: BLOCK_N rows of K and of V)
  { "WARPS",    { 2, 4, 8 } },             -- consumer warps (the producer warp is one more)
  { "KV_RING",  { 2, 3, 4, 6 } },          -- ring slots: KV_RING - 1 tiles in flight while one is read
  -- fixed: decode_mma.cuh's thread map (16-byte reads, all query heads of a KV head in one block)
  -- and the hardware e4m3 conversion (decode_fp8.lua keeps the bit moves to the plain register path)
  { "VEC_BYTES",   { 16 } },
  { "GQA_PACK",    { 1 } },
  { "STAGES",      { 1 } },
  { "DEQUANT",     { 0 } },
  { "MMA",         { 1 } },
  { "KV_TMA",      { 1 } },
  { "KV_HINT",     { 1 } },
  { "BLOCK_ORDER", { 1 } },
}

recipe.constraints = {
  -- decode_mma.cuh's 16-key steps per warp, at most two of them (as attention.decode_tma)
  "BLOCK_N % (16 * WARPS) == 0 and BLOCK_N // WARPS <= 32",
  -- the ring: KV_RING slots of BLOCK_N rows of K and V at head dim 128, one byte each, within 192 KiB
  function(c) return common.ring_bytes(c, 1) <= 192 * 1024 end,
}

-- decode_fp8.lua's GQA rule (its row-group rules follow from the constraints above), and a box
-- (min(page_size, BLOCK_N) rows) never leaves its page
recipe.requires = {
  "HQ % HKV == 0 and HQ // HKV <= 8",
  "BLOCK_N % page_size == 0 or page_size % BLOCK_N == 0",
}

-- decode_fp8's problems of per-head scales, and the page sizes whose boxes the fallback allows
recipe.domain = common.domain({ "min_len >= 0 and min_len <= max_pages * page_size", "kv_scale == 'head'",
                                "128 % page_size == 0 or page_size % 128 == 0",
                                "layout == 'nhd' or layout == 'hnd'" })
-- decode_fp8's problems of per-head scales in its layout, and its batch of 32 in the HND one
recipe.problems = {}
for _, p in ipairs(base.problems) do
  if p.kv_scale == "head" then
    local q = copy(p)
    q.layout = "nhd"
    recipe.problems[#recipe.problems + 1] = q
    if p.name == "b32hq32hkv8d128p16x256" then
      local h = copy(q)
      h.layout, h.name = "hnd", p.name .. "_hnd"
      recipe.problems[#recipe.problems + 1] = h
    end
  end
end
recipe.fallback = { SPLITS = 4, BLOCK_N = 32, WARPS = 2, KV_RING = 4, VEC_BYTES = 16, GQA_PACK = 1, STAGES = 1,
                    DEQUANT = 0, MMA = 1, KV_TMA = 1, KV_HINT = 1, BLOCK_ORDER = 1 }

-- split kernel: the consumer warps and the producer warp, the ring (K and V, one byte per element)
-- as dynamic shared memory
recipe.launch = common.launch("KV_RING * BLOCK_N * D * 2")
recipe.launch[1] = copy(recipe.launch[1])
recipe.launch[1].block = { "32 * (WARPS + 1)", 1, 1 }

-- decode_fp8.lua's args with the strides of the problem's layout, then the maps: one box is
-- min(page_size, BLOCK_N) rows of one page and head
local strides = { kv_stride_row = "layout == 'hnd' and D or HKV * D",
                  kv_stride_h = "layout == 'hnd' and page_size * D or D" }
recipe.args = {}
for i, a in ipairs(base.args) do
  if strides[a[1]] then
    a = copy(a)
    a.value = strides[a[1]]
  end
  recipe.args[i] = a
end
local box = { "D", 1, "min(page_size, BLOCK_N)", 1 }
recipe.args[#recipe.args + 1] = { "k_map", tensormap = { tensor = "k_cache", box = box } }
recipe.args[#recipe.args + 1] = { "v_map", tensormap = { tensor = "v_cache", box = box } }

recipe.reference = common.reference(function(p) return { HEAD_DIM = p.D, KV_FP8 = 1, KV_TMA = 1 } end)

return recipe
