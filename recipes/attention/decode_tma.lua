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
local tma = require "attention.shared.decode_tma"

local recipe = tma.copy(base)
recipe.name = "attention.decode_tma"
recipe.params = tma.params()
recipe.constraints = tma.constraints(2)

-- decode.lua's, and a box (min(page_size, BLOCK_N) rows) never leaves its page
recipe.requires = {
  "HQ % HKV == 0 and HQ // HKV <= 8",
  "BLOCK_N % (WARPS * 16 * VEC_BYTES // D) == 0",
  "BLOCK_N % page_size == 0 or page_size % BLOCK_N == 0",
}

-- every page size whose boxes the fallback's requires allow (powers of two up to 128, multiples of 128)
recipe.domain = common.domain({ "128 % page_size == 0 or page_size % 128 == 0" })
recipe.fallback = tma.fallback()
recipe.launch = tma.launch(2)
recipe.args = tma.args(base.args)
recipe.reference = common.reference(function(p) return { HEAD_DIM = p.D, KV_TMA = 1 } end)

return recipe
