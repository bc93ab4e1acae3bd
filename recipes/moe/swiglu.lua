-- moe/swiglu.lua: the gate/up projection of a Mixture-of-Experts layer with SwiGLU fused into the
-- epilogue of the grouped GEMM (templates/gemm/grouped_sm90.cuh, SWIGLU 1):
--   h_e = silu(a_e @ gate_e^T) * (a_e @ up_e^T) for every expert in one launch, from the fp32
--   accumulators, rounded to bf16 once; no [T, 2N] intermediate is written or read again.
-- Weights w [E][2N][K]: rows 0 .. N - 1 of expert e are its gate projection, rows N .. 2N - 1 its up
-- projection: vLLM's w13 [E, 2 * intermediate, hidden] (gate first, up second) as it is, and
-- torch.cat([gate, up], dim=1) of two [E, N, K] stacks. N is the intermediate size (h's columns), K
-- the hidden size. A tile of BLOCK_N accumulator columns covers BLOCK_N / 2 output columns: two TMA
-- boxes per stage, the gate rows and the matching up rows.
-- Two recipes, the layouts of recipes/moe/grouped.lua:
--   moe.grouped_swiglu         contiguous: a [T][K] sorted by expert, offsets i32 [E + 1], h [T][N]
--   moe.grouped_swiglu_masked  masked: a [E][cap][K], counts i32 [E], h [E][cap][N] (padding rows
--                              written with zeros)
-- The space is moe.grouped's on the TMA producer only (the gate and up boxes are two TMA loads):
-- tiles, consumers, stages, ping-pong, persistence, tile order. Tiles of 64 accumulator columns (32
-- outputs) store directly; wider ones through the TMA epilogue.
--
-- Problems: the layers of real MoE models, T = tokens * top_k routed rows with the skewed `offsets`
-- distribution (most experts short, a few long), from decode (a few rows per expert) to prefill:
--   Mixtral-8x7B: E 8, hidden 4096, intermediate 14336, top-2: 16, 256 and 4096 tokens
--   fine-grained experts, top-8: E 64, hidden 2048, intermediate 1408 (DeepSeek-V2-Lite /
--     Qwen1.5-MoE experts) at 8 tokens (one row per expert on average), 64 and 2048 tokens; E 128,
--     hidden 4096, intermediate 1536 (Qwen3-235B-A22B) at 64 and 4096 tokens; DeepSeek-V3's experts
--     (hidden 7168, intermediate 2048) as 64 local experts of an expert-parallel deployment, 32 tokens
-- min_tokens 0 on two decode problems: experts without tokens (many at one row per expert). A tail
-- problem (N, K no tile's multiple) checks the masks.
--
-- Metrics: flops 2 * T * 2N * K (the silu and product are not counted). bytes: a read, every
-- expert's weights read once (E * 2N * K * 2), h written; with min_tokens 0 no weights are counted
-- (empty experts' weights are not read, and how many there are is not known here: GB/s is a lower
-- bound), as in moe/grouped.lua.
--
-- Inputs: a ~ N(0, 1) (normalized activations), w ~ N(0, 0.02) (a trained layer's scale), so that
-- the gate sums are ~ N(0, 0.02^2 K), std 0.9 .. 1.7 here, where silu is not yet linear.

local SMEM_LIMIT = 227 * 1024
local experts = require "moe.shared.experts"
local TABLE_BYTES = experts.TABLE_BYTES  -- after the kernel's own shared memory

-- { BLOCK_M, BLOCK_N, CONSUMERS } of WS 1, and the tiles of one consumer warpgroup of WS 2 (ping-pong)
local SHAPES = {
  { 128, 256, 2 }, { 128, 128, 2 }, { 128, 128, 1 }, { 128, 64, 2 },
  { 64, 256, 1 }, { 64, 128, 1 }, { 64, 64, 1 },
}
local SHAPES_PINGPONG = { { 128, 128 }, { 64, 256 } }

local function in_list(list, ...)
  local want = { ... }
  for _, s in ipairs(list) do
    local ok = true
    for i = 1, #want do if s[i] ~= want[i] then ok = false break end end
    if ok then return true end
  end
  return false
end

-- Dynamic shared memory (gemm_sm90.cuh kSmemBytes with the TMA epilogue's boxes; then the table)
local function smem(c)
  return 1024 + c.STAGES * (c.BLOCK_M + c.BLOCK_N) * 128 + c.CONSUMERS * 2 * 8192 + 2 * c.STAGES * 8
      + (c.WS == 2 and 16 or 0) + TABLE_BYTES
end
local SMEM = "(1024 + STAGES * (BLOCK_M + BLOCK_N) * 128 + CONSUMERS * 2 * 8192 + 2 * STAGES * 8"
    .. " + (WS == 2 and 16 or 0) + " .. TABLE_BYTES .. ")"
local THREADS = "128 * (CONSUMERS + 1)"
-- resident blocks per SM (shared memory with the table, threads, 168 registers: setmaxnreg builds)
local PER_SM = "max(1, min(233472 // (" .. SMEM .. " + 1024), 2048 // " .. THREADS
    .. ", 65536 // (" .. THREADS .. " * 168)))"
local TILES_N = "((N + BLOCK_N // 2 - 1) // (BLOCK_N // 2))"  -- a tile stores BLOCK_N / 2 columns of h
local function grid_x(tiles) return "PERSISTENT == 1 and min(" .. tiles .. ", sm_count * " .. PER_SM .. ") or " .. tiles end

local params = {
  { "BLOCK_M",        { 64, 128 } },
  { "BLOCK_N",        { 128, 256, 64 } },  -- accumulator columns: half gate, half up
  { "CONSUMERS",      { 1, 2 } },
  { "STAGES",         { 4, 5, 3 } },
  { "WS",             { 1, 2 } },          -- 1: producer + consumers, 2: ping-pong consumers
  { "PERSISTENT",     { 0, 1 } },
  { "RASTER",         { 1, 8 } },          -- tile order over (all experts' m tiles) x (n tiles)
}

local constraints = {
  function(c)
    if c.WS == 2 then return c.CONSUMERS == 2 and in_list(SHAPES_PINGPONG, c.BLOCK_M, c.BLOCK_N) end
    return in_list(SHAPES, c.BLOCK_M, c.BLOCK_N, c.CONSUMERS)
  end,
  "WS == 1 or PERSISTENT == 1",  -- ping-pong as gemm_sm90.cuh has it: persistent
  -- 3 stages only where 4 do not fit next to the largest tiles
  function(c) return c.STAGES ~= 3 or c.BLOCK_M * c.BLOCK_N >= 128 * 256 end,
  function(c) return smem(c) <= SMEM_LIMIT end,
}

-- decode: fewer than 64 rows per expert on average: tiles of 64 rows, the tile order does not
-- matter (an expert has one or two m tiles)
local function applies(rows_per_expert)
  return function(c, p)
    if rows_per_expert(p) < 64 then
      if c.BLOCK_M ~= 64 then return false, "decode: tiles of 64 rows" end
      if c.RASTER ~= 1 then return false, "decode: an expert has one m tile, tile order does not matter" end
    end
    return true
  end
end

local function problem(fmt, t)
  t.name = string.format(fmt, t.E, t.N, t.K, t.T or t.cap, t.min_tokens or t.min_count)
  return t
end

-- { E, N (intermediate), K (hidden), top_k }
local MIXTRAL = { 8, 14336, 4096, 2 }
local E64 = { 64, 1408, 2048, 8 }
local E128 = { 128, 1536, 4096, 8 }
local DSV3_EP4 = { 64, 2048, 7168, 8 }

local function contiguous_problems()
  local t = {}
  local function add(s, tokens, min_tokens)
    t[#t + 1] = problem("e%dn%dk%dt%dm%d", { E = s[1], N = s[2], K = s[3], T = tokens * s[4], min_tokens = min_tokens })
  end
  add(MIXTRAL, 16, 1); add(MIXTRAL, 256, 1); add(MIXTRAL, 4096, 1)
  add(E64, 8, 1); add(E64, 8, 0); add(E64, 64, 1); add(E64, 2048, 1)
  add(E128, 64, 1); add(E128, 64, 0); add(E128, 4096, 1)
  add(DSV3_EP4, 32, 1)
  add({ 8, 1000, 1032, 1 }, 1000, 0)  -- tails: N, K past the tiles, empty experts
  return t
end

-- masked: capacity per expert; counts uniform in min_count .. cap
local function masked_problems()
  local t = {}
  local function add(s, cap, min_count)
    t[#t + 1] = problem("e%dn%dk%dcap%dm%d", { E = s[1], N = s[2], K = s[3], cap = cap, min_count = min_count })
  end
  add(MIXTRAL, 16, 1); add(MIXTRAL, 2048, 0)
  add(E64, 16, 1); add(E64, 512, 0)
  add({ 8, 1000, 1032 }, 300, 0)  -- tails, some 128-row tiles past the counts
  return t
end

local DOMAIN = { "E >= 1 and E <= 256", "N >= 8 and N % 8 == 0", "K >= 64 and K % 8 == 0" }
-- every variant's producer loads boxes 64 wide in k with TMA (in the domain too); as `requires`, it
-- also keeps the entries portable (applies alone would make them exact-only)
local REQUIRES = { "K >= 64" }

-- every config runs every problem of the domain; this one fits any GPU's shared memory
local FALLBACK = { BLOCK_M = 64, BLOCK_N = 128, CONSUMERS = 1, STAGES = 4, WS = 1, PERSISTENT = 0, RASTER = 1 }

-- tensor maps over the 2-D views (grouped_sm90.cuh): boxes clipped to the tensors, as the kernel
-- expects (its expect_tx counts the clipped boxes); a weight box is BLOCK_N / 2 rows, gate or up
local function tensormaps(rows)
  return {
    { "tmA", tensormap = { tensor = "a", swizzle = 128, dims = { "K", rows },
      box = { "min(64, K)", "min(BLOCK_M, " .. rows .. ")" } } },
    { "tmW", tensormap = { tensor = "w", swizzle = 128, dims = { "K", "E * 2 * N" },
      box = { "min(64, K)", "min(BLOCK_N // 2, E * 2 * N)" } } },
    { "tmC", tensormap = { tensor = "h", swizzle = 128, dims = { "N", rows },
      box = { "min(64, N)", "min(64, " .. rows .. ")" } } },
  }
end

local W_INIT = { "normal", 0, 0.02 }

local function args(layout)
  local t
  if layout == "contiguous" then
    t = {
      { "a", tensor = "bf16", shape = { "T", "K" }, init = { "normal", 0, 1 } },
      { "w", tensor = "bf16", shape = { "E", "2 * N", "K" }, init = W_INIT },
      { "h", tensor = "bf16", shape = { "T", "N" }, output = true },
      { "offsets", tensor = "i32", shape = { "E + 1" }, init = { "offsets", "T", "min_tokens" } },
      { "E", scalar = "i32", value = "E" },
      { "M", scalar = "i32", value = "T" },
    }
  else
    t = {
      { "a", tensor = "bf16", shape = { "E", "cap", "K" }, init = { "normal", 0, 1 } },
      { "w", tensor = "bf16", shape = { "E", "2 * N", "K" }, init = W_INIT },
      { "h", tensor = "bf16", shape = { "E", "cap", "N" }, output = true },
      { "counts", tensor = "i32", shape = { "E" }, init = { "randint", "min_count", "cap" } },
      { "E", scalar = "i32", value = "E" },
      { "M", scalar = "i32", value = "cap" },
    }
  end
  t[#t + 1] = { "N", scalar = "i32", value = "N" }
  t[#t + 1] = { "K", scalar = "i32", value = "K" }
  for _, m in ipairs(tensormaps(layout == "contiguous" and "T" or "E * cap")) do t[#t + 1] = m end
  return t
end

local function reference(layout)
  local rows = layout == "contiguous" and "T" or "E * cap"
  return {
    source = "templates/gemm/reference_grouped.cuh",
    kernel = "grouped_swiglu_reference",
    grid = { "(N + 15) // 16", "(" .. rows .. " + 15) // 16", 1 },
    block = { 16, 16, 1 },
    shared = 0,
    defines = { LAYOUT = layout == "contiguous" and "0" or "1", SWIGLU = "1" },
  }
end

-- The reference sums in fp64 and rounds silu(g) * u to bf16 once; the kernel sums in fp32 (relative
-- error ~1e-6 at these K) and takes silu from ex2.approx and a fast divide (~2 ulp of fp32), then
-- rounds once: the two differ by at most one bf16 ulp, where the exact value lies near a rounding
-- boundary. |h| stays under 128 for these inputs (gate and up ~ N(0, <= 1.7^2)), where an ulp is 0.5.
local tolerance = { rel_l2 = 1e-2, max_abs = 1 }

local function recipe(layout)
  local contiguous = layout == "contiguous"
  return {
    name = contiguous and "moe.grouped_swiglu" or "moe.grouped_swiglu_masked",
    template = "templates/gemm/grouped_sm90.cuh",
    kernel = "grouped_swiglu_bf16",
    params = params,
    constraints = constraints,
    domain = contiguous and { DOMAIN[1], DOMAIN[2], DOMAIN[3], "T >= 1" } or { DOMAIN[1], DOMAIN[2], DOMAIN[3], "cap >= 1" },
    requires = REQUIRES,
    applies = applies(contiguous and function(p) return p.T / p.E end or function(p) return p.cap / 2 end),
    defines = { LAYOUT = contiguous and "0" or "1", ZERO_PAD = "1", SWIGLU = "1", USE_TMA = "1", PRODUCER_WARPS = "1" },
    fallback = FALLBACK,
    problems = contiguous and contiguous_problems() or masked_problems(),
    launch = {
      grid = { grid_x(experts.tiles(layout, TILES_N)), 1, 1 },
      block = { THREADS, 1, 1 },
      shared = SMEM,
    },
    args = args(layout),
    reference = reference(layout),
    tolerance = tolerance,
    metrics = contiguous and {
      flops = "2 * T * 2 * N * K",
      bytes = "2 * (T * K + (min_tokens > 0 and E or 0) * 2 * N * K + T * N)",
    } or {
      flops = "2 * E * (min_count + cap) / 2 * 2 * N * K",
      bytes = "2 * (E * (min_count + cap) / 2 * K + E * 2 * N * K + E * cap * N)",
    },
  }
end

return { recipe("contiguous"), recipe("masked") }
