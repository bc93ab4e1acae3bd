-- attention/shared/varlen.lua: what attention.varlen (packed sequences, as many keys as queries)
-- and attention.varlen_kv (keys longer than queries: chunked prefill over a cached prefix) share:
-- both are templates/attention/prefill_sm90.cuh with VARLEN = 1, the same mainloop, knobs, register
-- budgets, launch geometry and argument list. They differ in the token counts the query and key
-- tensors have (T for both in varlen; TQ and TK in varlen_kv), the sequence offsets they take and
-- the block's work record. Not a recipe, hence below recipes/<family>/ where only recipes are: each
-- recipe requires it and builds fresh tables from these functions.

local M = {}

-- Query heads per tile row group and head blocks of the grid.
M.G = "(GQA_PACK * (HQ // HKV - 1) + 1)"
M.HEADS = "(HQ // " .. M.G .. ")"

-- Tiles of the grid, an upper bound on the query tiles of all sequences for tq query tokens.
function M.tiles(tq)
  return "(" .. tq .. " * " .. M.G .. " // (64 * CONSUMERS) + B)"
end

-- Dynamic shared memory (prefill_sm90.cuh kSmemBytes, PERSISTENT = 0): alignment slack, the Q tile,
-- STAGES K and V tiles, 1 + 4 * STAGES mbarriers, the block's work (work_bytes).
function M.smem(work_bytes)
  return "(1024 + (64 * CONSUMERS + 2 * STAGES * BLOCK_N) * D * 2 + (1 + 4 * STAGES) * 8 + " .. work_bytes .. ")"
end

function M.params()
  return {
    { "BLOCK_N",   { 64, 128, 176 } },  -- keys per K/V tile (n of the Q K^T wgmma)
    { "CONSUMERS", { 1, 2 } },          -- consumer warpgroups; query rows per tile = 64 * CONSUMERS
    { "STAGES",    { 2, 3 } },          -- K/V ring depth
    { "OVERLAP",   { 0, 1 } },          -- 1: Q K_{j+1}^T and P_j V_j in flight together (FA3 style)
    -- tile order: 0 sequence by sequence, 1 the last (longest causal) tile of each sequence first,
    -- 2 the highest tile index of the whole batch first (heaviest causal work first), heads fastest
    { "SCHED",     { 0, 1, 2 } },
    { "PINGPONG",  { 0, 1 } },          -- 1: consumer warpgroups take turns issuing wgmma (FA3 schedule)
    { "USE_TMA",   { 0, 1 } },          -- 1: TMA producer (one thread), 0: cp.async
    { "MIN_BLOCKS", { 1, 2 } },         -- 2 (one consumer warpgroup, TMA): two blocks per SM
    { "LEAN_PRODUCER", { 0, 1 } },      -- 1: the producer is one warp (MIN_BLOCKS 2 only)
    { "GQA_PACK",  { 0, 1 } },          -- 1: a tile packs the query heads of one KV head
  }
end

function M.constraints()
  return {
    "PINGPONG == 0 or (OVERLAP == 1 and CONSUMERS >= 2)",
    -- not overlapped: only the lean two-blocks-per-SM shape, where it compiled without spills in
    -- prefill_sm90 (the other shapes won overlapped there)
    "OVERLAP == 1 or (MIN_BLOCKS == 2 and LEAN_PRODUCER == 1)",
    -- one block per SM: two consumer warpgroups; two per SM: one consumer warpgroup and the TMA
    -- producer, lean up to BLOCK_N 128 (prefill_sm90's register budgets)
    "(MIN_BLOCKS == 1 and LEAN_PRODUCER == 0 and CONSUMERS == 2) or (MIN_BLOCKS == 2 and CONSUMERS == 1 and "
      .. "USE_TMA == 1 and ((LEAN_PRODUCER == 1 and BLOCK_N <= 128) or (LEAN_PRODUCER == 0 and OVERLAP == 1)))",
    -- the cp.async producer with a 2-deep ring; 3 stages at BLOCK_N 128 only
    "USE_TMA == 1 or STAGES == 2",
    "STAGES == 2 or BLOCK_N == 128",
  }
end

-- What a config needs to run a problem (prefill_sm90.cuh static_asserts, the SM's shared memory);
-- tma_boxes: the recipe's rule that a TMA box is no larger than its tensor.
function M.requires(tma_boxes, smem)
  return {
    "HQ % HKV == 0",
    "causal or SCHED == 0",  -- SCHED only reorders causal work
    "GQA_PACK == 0 or (HQ > HKV and 64 % (HQ // HKV) == 0)",
    tma_boxes,
    smem .. " <= 227 * 1024",
    "MIN_BLOCKS * (" .. smem .. " + 1024) <= 228 * 1024",  -- each block also holds 1 KiB of the system's
  }
end

function M.defines(extra)
  local d = { HEAD_DIM = "D", IS_CAUSAL = "causal", TMA_ARGS = 1, VARLEN = 1,
              GQA_RATIO = "GQA_PACK * (HQ // HKV)" }  -- 0 unless packed: one binary for every ratio
  for k, v in pairs(extra or {}) do d[k] = v end
  return d
end

-- The problems the family serves: D, heads within grid.y; extra: the recipe's token rules.
function M.domain(extra)
  local d = { "D == 64 or D == 128", "HKV >= 1 and HQ % HKV == 0 and HQ <= 65535" }
  for _, e in ipairs(extra) do d[#d + 1] = e end
  return d
end

-- The generic variant: the cp.async producer (any token count), no packing, every
-- D and GQA ratio, sequence order (causal or not).
function M.fallback()
  return { BLOCK_N = 128, CONSUMERS = 2, STAGES = 2, OVERLAP = 1, SCHED = 0, PINGPONG = 1, USE_TMA = 0,
           MIN_BLOCKS = 1, LEAN_PRODUCER = 0, GQA_PACK = 0 }
end

-- The grid depends on the query tokens tq, B and the heads only, never on the lengths.
function M.launch(tq, smem)
  local tiles = M.tiles(tq)
  return {
    grid = { "SCHED == 2 and " .. tiles .. " * " .. M.HEADS .. " or " .. tiles, "SCHED == 2 and 1 or " .. M.HEADS, 1 },
    block = { "128 * CONSUMERS + 128 - 96 * LEAN_PRODUCER", 1, 1 },
    shared = smem,
  }
end

-- The kernel's arguments: q and o over tq query tokens, k and v over tk key tokens, the sequence
-- offsets (offsets: the recipe's i32 tensors), B and the query token count (scalar tq), heads, row
-- strides, the softmax scale and the tensor maps. adversarial: the second input set's data of q,
-- k and v ({ q = ..., k = ..., v = ... }, each optional).
function M.args(tq, tk, offsets, adversarial)
  adversarial = adversarial or {}
  local a = {
    { "q", tensor = "bf16", shape = { tq, "HQ", "D" },  init = { "normal", 0, 1 }, adversarial = adversarial.q },
    { "k", tensor = "bf16", shape = { tk, "HKV", "D" }, init = { "normal", 0, 1 }, adversarial = adversarial.k },
    { "v", tensor = "bf16", shape = { tk, "HKV", "D" }, init = { "normal", 0, 1 }, adversarial = adversarial.v },
    { "o", tensor = "bf16", shape = { tq, "HQ", "D" },  output = true },
  }
  for _, e in ipairs(offsets) do a[#a + 1] = e end
  local rest = {
    { "B",   scalar = "i32", value = "B" },
    { tq,    scalar = "i32", value = tq },
    { "HQ",  scalar = "i32", value = "HQ" },
    { "HKV", scalar = "i32", value = "HKV" },
    -- row (token) strides in elements: contiguous here; an engine passes its own (the cp.async
    -- producer reads them, the tensor maps below are built over them)
    { "q_ld", scalar = "i64", value = "HQ * D" },
    { "k_ld", scalar = "i64", value = "HKV * D" },
    { "v_ld", scalar = "i64", value = "HKV * D" },
    { "o_ld", scalar = "i64", value = "HQ * D" },
    -- softmax(x * scale) is computed as 2^(x * scale * log2 e); scale = 1 / sqrt(D)
    { "scale_log2", scalar = "f32", value = "1.4426950408889634 / sqrt(D)" },
    -- 4-D maps {D, heads, tokens, 1}, 128-byte swizzle, box {64 columns, heads, rows, 1}: the Q box
    -- holds G heads of BLOCK_M / G tokens (GQA_PACK), K and V one head of BLOCK_N tokens. Their token
    -- strides are the row strides above, so a launch that passes its own q_ld, k_ld, v_ld gets maps
    -- over its strided view (libtunert re-encodes them; the strides must stay multiples of 16
    -- bytes). Variants without USE_TMA get maps too (every kernel takes them), rows clipped to the
    -- tokens.
    { "tmQ", tensormap = { tensor = "q", swizzle = 128, dims = { "D", "HQ", tq, 1 },
      strides = { "D * 2", "q_ld * 2", tq .. " * q_ld * 2" },
      box = { 64, M.G, "max(1, min(64 * CONSUMERS // " .. M.G .. ", " .. tq .. " + USE_TMA * 64 * CONSUMERS))", 1 } } },
    { "tmK", tensormap = { tensor = "k", swizzle = 128, dims = { "D", "HKV", tk, 1 },
      strides = { "D * 2", "k_ld * 2", tk .. " * k_ld * 2" },
      box = { 64, 1, "min(BLOCK_N, " .. tk .. " + USE_TMA * BLOCK_N)", 1 } } },
    { "tmV", tensormap = { tensor = "v", swizzle = 128, dims = { "D", "HKV", tk, 1 },
      strides = { "D * 2", "v_ld * 2", tk .. " * v_ld * 2" },
      box = { 64, 1, "min(BLOCK_N, " .. tk .. " + USE_TMA * BLOCK_N)", 1 } } },
  }
  for _, e in ipairs(rest) do a[#a + 1] = e end
  return a
end

-- The fp32 reference (templates/attention/reference_varlen.cuh), one thread per query row;
-- defines is the recipe's function of the problem (a reference table's values are verbatim).
function M.reference(kernel, tq, defines)
  return {
    source = "templates/attention/reference_varlen.cuh",
    kernel = kernel,
    grid = { "(" .. tq .. " + 127) // 128", "HQ", 1 },
    block = { 128, 1, 1 },
    shared = 0,
    defines = defines,
  }
end

-- As attention/prefill_sm90.lua: the output and P (before P V) are rounded to bf16, the reference
-- is fp32 throughout; tolerance.honest allows for the error P's rounding adds to the output's.
function M.tolerance() return { rel_l2 = 2e-2, max_abs = 5e-2, honest = 2 } end

return M
