-- Experiment (not a recipe of the repository): attention.decode_fp8
-- on the tensor-core path with three template knobs that the recipes do not tune yet:
-- QK_CHAINS (q . k's mma chain split into independent accumulators), RESCALE_SKIP (no accumulator
-- rescale on a tile where no max moved), MIN_BLOCKS (__launch_bounds__' blocks per SM).
local base = require "attention.decode_fp8"
local r = {}
for k, v in pairs(base) do r[k] = v end
local fp8 = base.name == "attention.decode_fp8"
r.params = {
  { "SPLITS", { 1, 4, 8, 16, 32 } },
  { "BLOCK_N", { 64, 128 } },
  { "WARPS", { 4, 8 } },
  { "VEC_BYTES", { 16 } },
  { "GQA_PACK", { 1 } },
  { "STAGES", { 1, 2 } },
  { "KV_RING", { 0, 2, 3 } },
}
if fp8 then r.params[#r.params + 1] = { "DEQUANT", { 0 } } end
for _, p in ipairs({ { "MMA", { 1 } }, { "QK_CHAINS", { 1, 2 } }, { "RESCALE_SKIP", { 0, 1 } },
                     { "MIN_BLOCKS", { 1, 2 } }, { "KV_HINT", { 1 } }, { "BLOCK_ORDER", { 1 } } }) do
  r.params[#r.params + 1] = p
end
r.fallback = { SPLITS = 16, BLOCK_N = 128, WARPS = 8, VEC_BYTES = 16, GQA_PACK = 1, STAGES = 1, KV_RING = 2, MMA = 1,
               QK_CHAINS = 1, RESCALE_SKIP = 0, MIN_BLOCKS = 1, KV_HINT = 1, BLOCK_ORDER = 1 }
if fp8 then r.fallback.DEQUANT = 0 end
return r
