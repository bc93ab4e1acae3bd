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
local tma = require "attention.shared.decode_tma"

local recipe = tma.copy(base)
recipe.name = "attention.decode_fp8_tma"
-- fixed besides the TMA ring's: the hardware e4m3 conversion (decode_fp8.lua keeps the bit moves
-- to the plain register path)
recipe.params = tma.params({ { "DEQUANT", { 0 } } })
recipe.constraints = tma.constraints(1)

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
    local q = tma.copy(p)
    q.layout = "nhd"
    recipe.problems[#recipe.problems + 1] = q
    if p.name == "b32hq32hkv8d128p16x256" then
      local h = tma.copy(q)
      h.layout, h.name = "hnd", p.name .. "_hnd"
      recipe.problems[#recipe.problems + 1] = h
    end
  end
end
recipe.fallback = tma.fallback({ DEQUANT = 0 })
recipe.launch = tma.launch(1)
-- decode_fp8.lua's args with the strides of the problem's layout, then the maps
recipe.args = tma.args(base.args, { kv_stride_row = "layout == 'hnd' and D or HKV * D",
                                    kv_stride_h = "layout == 'hnd' and page_size * D or D" })
recipe.reference = common.reference(function(p) return { HEAD_DIM = p.D, KV_FP8 = 1, KV_TMA = 1 } end)

return recipe
