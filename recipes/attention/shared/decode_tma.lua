-- attention/shared/decode_tma.lua: what attention.decode_tma (bf16 KV cache) and
-- attention.decode_fp8_tma (e4m3 KV cache) share: templates/attention/decode_tma.cuh's split kernel,
-- whose producer warp fills a KV_RING-deep ring of K/V tiles by bulk tensor copies, on top of the
-- base family's recipe. They differ in the bytes per K/V element and in the knobs and dims their base
-- family adds. Not a recipe (see shared/decode.lua); each TMA recipe requires it.

local common = require "attention.shared.decode"

local M = {}

-- A shallow copy: the TMA recipe starts as its base family's table and replaces what differs.
function M.copy(t)
  local c = {}
  for k, v in pairs(t) do c[k] = v end
  return c
end

-- The knobs, in this order: the four the producer's ring is tuned by, then the fixed ones, with
-- extra_fixed (the base family's own, e.g. the e4m3 conversion) after STAGES.
function M.params(extra_fixed)
  local p = {
    { "SPLITS",   { 1, 2, 4, 8, 16, 32 } },  -- KV chunks per (sequence, KV head)
    { "BLOCK_N",  { 32, 64, 128 } },         -- keys per tile (one ring slot: BLOCK_N rows of K and of V)
    { "WARPS",    { 2, 4, 8 } },             -- consumer warps (the producer warp is one more)
    { "KV_RING",  { 2, 3, 4, 6 } },          -- ring slots: KV_RING - 1 tiles in flight while one is read
    -- fixed: decode_mma.cuh's thread map (16-byte reads, all query heads of a KV head in one block)
    { "VEC_BYTES",   { 16 } },
    { "GQA_PACK",    { 1 } },
    { "STAGES",      { 1 } },
  }
  for _, e in ipairs(extra_fixed or {}) do p[#p + 1] = e end
  for _, e in ipairs({ { "MMA", { 1 } }, { "KV_TMA", { 1 } }, { "KV_HINT", { 1 } }, { "BLOCK_ORDER", { 1 } } }) do
    p[#p + 1] = e
  end
  return p
end

-- decode_mma.cuh's 16-key steps per warp, at most two of them (decode.cuh's register budget of the
-- row-group path, which its static_assert applies to every config); the ring of KV_RING slots of
-- BLOCK_N rows of K and V at head dim 128, elem_bytes each, within 192 KiB
function M.constraints(elem_bytes)
  return {
    "BLOCK_N % (16 * WARPS) == 0 and BLOCK_N // WARPS <= 32",
    function(c) return common.ring_bytes(c, elem_bytes) <= 192 * 1024 end,
  }
end

-- The fallback: four splits of 32-key tiles, two consumer warps, a four-slot ring; extra gives the
-- base family's own knobs.
function M.fallback(extra)
  local f = { SPLITS = 4, BLOCK_N = 32, WARPS = 2, KV_RING = 4, VEC_BYTES = 16, GQA_PACK = 1, STAGES = 1,
              MMA = 1, KV_TMA = 1, KV_HINT = 1, BLOCK_ORDER = 1 }
  for k, v in pairs(extra or {}) do f[k] = v end
  return f
end

-- The split kernel: the consumer warps and the producer warp, the ring (K and V of elem_bytes per
-- element) as dynamic shared memory; the combine kernel as shared/decode.lua's.
function M.launch(elem_bytes)
  local launch = common.launch("KV_RING * BLOCK_N * D * " .. 2 * elem_bytes)
  launch[1] = M.copy(launch[1])
  launch[1].block = { "32 * (WARPS + 1)", 1, 1 }
  return launch
end

-- The base family's args (with replace[name] = value expression where given), then the maps: one
-- box is min(page_size, BLOCK_N) rows of one page and head.
function M.args(base_args, replace)
  local args = {}
  for i, a in ipairs(base_args) do
    if replace and replace[a[1]] then
      a = M.copy(a)
      a.value = replace[a[1]]
    end
    args[i] = a
  end
  local box = { "D", 1, "min(page_size, BLOCK_N)", 1 }
  args[#args + 1] = { "k_map", tensormap = { tensor = "k_cache", box = box } }
  args[#args + 1] = { "v_map", tensormap = { tensor = "v_cache", box = box } }
  return args
end

return M
