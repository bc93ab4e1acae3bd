-- attention/decode_tma.lua: attention.decode (recipes/attention/decode.lua: the same problems,
-- serving contract, inputs, reference and tolerance) with its tensor-core split kernel fed by bulk
-- tensor copies: one producer warp per block fills a KV_RING-deep ring of K/V tiles in shared memory
-- (templates/attention/decode_tma.cuh says why: a paged cache streams faster through TMA than through
-- per-lane loads). A family of its own because its kernels take two more arguments, the tensor maps
-- k_map and v_map of the caches, which the worker and libtunert build (docs/tensormap-args.md): the
-- calling convention of attention.decode stays as it is.
--
-- The maps describe the cache as packed [B * max_pages][page_size][HKV][D]; a cache they do not
-- describe (other strides, or a pool with more pages than B * max_pages) is read through cp.async
-- instead, so every variant serves attention.decode's whole contract.

local base = require "attention.decode"
local common = require "attention.shared.decode"

local function copy(t)
  local c = {}
  for k, v in pairs(t) do c[k] = v end
  return c
end

local recipe = copy(base)
recipe.name = "attention.decode_tma"

recipe.params = {
  { "SPLITS",   { 1, 2, 4, 8, 16, 32 } },  -- KV chunks per (sequence, KV head)
  { "BLOCK_N",  { 32, 64, 128 } },         -- keys per tile (one ring slot: BLOCK_N rows of K and of V)
  { "WARPS",    { 2, 4, 8 } },             -- consumer warps (the producer warp is one more)
  { "KV_RING",  { 2, 3, 4, 6 } },          -- ring slots: KV_RING - 1 tiles in flight while one is read
  -- fixed: decode_mma.cuh's thread map (16-byte reads, all query heads of a KV head in one block)
  { "VEC_BYTES",   { 16 } },
  { "GQA_PACK",    { 1 } },
  { "STAGES",      { 1 } },
  { "MMA",         { 1 } },
  { "KV_TMA",      { 1 } },
  { "KV_HINT",     { 1 } },
  { "BLOCK_ORDER", { 1 } },
}

recipe.constraints = {
  -- decode_mma.cuh's 16-key steps per warp, at most two of them (decode.cuh's register budget of
  -- the row-group path, which its static_assert applies to every config)
  "BLOCK_N % (16 * WARPS) == 0 and BLOCK_N // WARPS <= 32",
  -- the ring: KV_RING slots of BLOCK_N rows of K and V at head dim 128, within 192 KiB
  function(c) return common.ring_bytes(c, 2) <= 192 * 1024 end,
}

-- decode.lua's, and a box (min(page_size, BLOCK_N) rows) never leaves its page
recipe.requires = {
  "HQ % HKV == 0 and HQ // HKV <= 8",
  "BLOCK_N % (WARPS * 16 * VEC_BYTES // D) == 0",
  "BLOCK_N % page_size == 0 or page_size % BLOCK_N == 0",
}

-- every page size whose boxes the fallback's requires allow (powers of two up to 128, multiples of 128)
recipe.domain = common.domain({ "128 % page_size == 0 or page_size % 128 == 0" })
recipe.fallback = { SPLITS = 4, BLOCK_N = 32, WARPS = 2, KV_RING = 4, VEC_BYTES = 16, GQA_PACK = 1, STAGES = 1,
                    MMA = 1, KV_TMA = 1, KV_HINT = 1, BLOCK_ORDER = 1 }

-- split kernel: the consumer warps and the producer warp, the ring as dynamic shared memory
recipe.launch = common.launch("KV_RING * BLOCK_N * D * 4")
recipe.launch[1] = copy(recipe.launch[1])
recipe.launch[1].block = { "32 * (WARPS + 1)", 1, 1 }

-- decode.lua's args, then the maps: one box is min(page_size, BLOCK_N) rows of one page and head
recipe.args = {}
for i, a in ipairs(base.args) do recipe.args[i] = a end
local box = { "D", 1, "min(page_size, BLOCK_N)", 1 }
recipe.args[#recipe.args + 1] = { "k_map", tensormap = { tensor = "k_cache", box = box } }
recipe.args[#recipe.args + 1] = { "v_map", tensormap = { tensor = "v_cache", box = box } }

recipe.reference = common.reference(function(p) return { HEAD_DIM = p.D, KV_TMA = 1 } end)

return recipe
