-- moe/grouped.lua: bf16 grouped GEMM for Mixture-of-Experts, templates/gemm/grouped_sm90.cuh: c_e =
-- a_e @ w[e]^T for every expert in one launch, w [E][N][K] (nn.Linear weights), fp32 accumulation.
-- Two recipes, one per layout an engine keeps its routed tokens in:
--   moe.grouped         contiguous: a [T][K] sorted by expert, offsets i32 [E + 1], c [T][N]
--   moe.grouped_masked  masked: a [E][cap][K], counts i32 [E] (rows past a count are padding), c
--                       [E][cap][N]; the kernel writes the padding rows of c with zeros (ZERO_PAD 1),
--                       which the verification needs (every output element is compared)
-- Both run gemm_sm90.cuh's Hopper mainloop (wgmma from 128-byte-swizzled shared memory, a producer
-- warpgroup with TMA or cp.async, setmaxnreg, WS 2 ping-pong) over a tile list that every block
-- builds from the counts; the grid depends on the dims only (an upper bound of the tiles, or one
-- persistent wave on sm_count), so a CUDA graph replays it while the routing changes.
--
-- Problems: real MoE layers at decode (a few tokens per expert) and prefill (thousands), T = tokens *
-- top_k routed rows, with the skewed `offsets` distribution (most experts short, a few long):
--   Mixtral-8x7B: E 8, hidden 4096, intermediate 14336, top-2: gate+up fused (N 28672, K 4096) and
--     down (N 4096, K 14336); 16 tokens (T 32) and 4096 tokens (T 8192)
--   fine-grained experts, top-8: E 64, hidden 2048, intermediate 1408 (DeepSeek-V2-Lite / Qwen1.5-MoE
--     expert shapes), and E 128, hidden 4096, intermediate 1536 (Qwen3-235B-A22B); 64 tokens (T 512)
--     and 2048 / 4096 tokens (T 16384 / 32768)
-- min_tokens is the least tokens an expert gets: 1 for most problems, so that every expert's weights
-- are read and the bytes metric is exact; 0 for two problems, so that experts without tokens (which
-- the distribution then gives) are exercised. A tail problem (N, K no tile's multiple) checks the masks.
--
-- Metrics: flops 2 * T * N * K (masked: the expected valid rows, E * (min_count + cap) / 2). bytes:
-- a read, every expert's weights read once (E * N * K * 2) and c written. At decode the weights are
-- nearly all of it, so GB/s is the figure of merit there. With min_tokens 0 some experts may be
-- empty and their weights are not read, and how many is not known here: those problems count no
-- weights at all, so their GB/s is a lower bound (the peak check of the results must not flag a
-- kernel for skipping weights it had no need to read).

local SMEM_LIMIT = 227 * 1024
local experts = require "moe.shared.experts"
local TABLE_BYTES = experts.TABLE_BYTES  -- after the kernel's own shared memory

-- { BLOCK_M, BLOCK_N, CONSUMERS } of WS 1 (each consumer warpgroup owns 64 or 128 rows), and the
-- tiles of one consumer warpgroup of WS 2 (ping-pong, two consumers)
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

-- Dynamic shared memory (gemm_sm90.cuh kSmemBytes: ring, TMA epilogue boxes, barriers; then the table)
local function smem(c)
  local epi = c.USE_TMA == 1 and c.CONSUMERS * 2 * 8192 or 0
  return 1024 + c.STAGES * (c.BLOCK_M + c.BLOCK_N) * 128 + epi + 2 * c.STAGES * 8 + (c.WS == 2 and 16 or 0)
end
local SMEM = "(1024 + STAGES * (BLOCK_M + BLOCK_N) * 128 + (USE_TMA == 1 and CONSUMERS * 2 * 8192 or 0)"
    .. " + 2 * STAGES * 8 + (WS == 2 and 16 or 0) + " .. TABLE_BYTES .. ")"
local THREADS = "128 * (CONSUMERS + 1)"
-- resident blocks per SM (shared memory with the table, threads, 168 registers: setmaxnreg builds)
local PER_SM = "max(1, min(233472 // (" .. SMEM .. " + 1024), 2048 // " .. THREADS
    .. ", 65536 // (" .. THREADS .. " * 168)))"
local TILES_N = "((N + BLOCK_N - 1) // BLOCK_N)"
local function grid_x(tiles) return "PERSISTENT == 1 and min(" .. tiles .. ", sm_count * " .. PER_SM .. ") or " .. tiles end

local params = {
  { "BLOCK_M",        { 64, 128 } },
  { "BLOCK_N",        { 64, 128, 256 } },
  { "CONSUMERS",      { 1, 2 } },
  { "STAGES",         { 4, 5, 3 } },
  { "WS",             { 1, 2 } },          -- 1: producer + consumers, 2: ping-pong consumers
  { "USE_TMA",        { 1, 0 } },          -- 1: one TMA thread fills the ring, 0: cp.async warps
  { "PRODUCER_WARPS", { 1, 4 } },          -- producer warps that copy (TMA: the one that issues)
  { "PERSISTENT",     { 0, 1 } },
  { "RASTER",         { 1, 8 } },          -- tile order over (all experts' m tiles) x (n tiles)
}

local constraints = {
  function(c)
    if c.WS == 2 then return c.CONSUMERS == 2 and in_list(SHAPES_PINGPONG, c.BLOCK_M, c.BLOCK_N) end
    return in_list(SHAPES, c.BLOCK_M, c.BLOCK_N, c.CONSUMERS)
  end,
  "PRODUCER_WARPS == (USE_TMA == 1 and 1 or 4)",
  -- ping-pong as gemm_sm90.cuh has it: TMA, persistent
  "WS == 1 or (USE_TMA == 1 and PERSISTENT == 1)",
  -- the cp.async producer for comparison only: 4 deep, one block per tile, row-major order
  "USE_TMA == 1 or (STAGES == 4 and PERSISTENT == 0 and RASTER == 1)",
  -- 3 stages only where 4 do not fit next to the largest tiles
  function(c) return c.STAGES ~= 3 or c.BLOCK_M * c.BLOCK_N >= 128 * 256 end,
  function(c) return smem(c) + TABLE_BYTES <= SMEM_LIMIT end,
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

-- { E, N, K }: the layers' GEMMs (gate+up fused: N = 2 * intermediate; down: N = hidden)
local MIXTRAL = { { 8, 28672, 4096 }, { 8, 4096, 14336 } }
local E64 = { { 64, 2816, 2048 }, { 64, 2048, 1408 } }
local E128 = { { 128, 3072, 4096 }, { 128, 4096, 1536 } }

local function contiguous_problems()
  local t = {}
  local function add(s, T, min_tokens)
    t[#t + 1] = problem("e%dn%dk%dt%dm%d", { E = s[1], N = s[2], K = s[3], T = T, min_tokens = min_tokens })
  end
  for _, s in ipairs(MIXTRAL) do add(s, 32, 1); add(s, 8192, 1) end
  for _, s in ipairs(E64) do add(s, 512, 1); add(s, 16384, 1) end
  for _, s in ipairs(E128) do add(s, 512, 1); add(s, 32768, 1) end
  add(E128[1], 512, 0)                  -- decode with empty experts
  add({ 8, 1000, 1032 }, 1000, 0)       -- tails: N, K past the tiles, empty experts
  return t
end

-- masked: capacity per expert; counts uniform in min_count .. cap
local function masked_problems()
  local t = {}
  local function add(s, cap, min_count)
    t[#t + 1] = problem("e%dn%dk%dcap%dm%d", { E = s[1], N = s[2], K = s[3], cap = cap, min_count = min_count })
  end
  add(MIXTRAL[1], 16, 1); add(MIXTRAL[1], 4096, 0)
  add(MIXTRAL[2], 16, 1); add(MIXTRAL[2], 4096, 0)
  add(E64[1], 16, 1); add(E64[1], 512, 0)
  add(E128[2], 16, 1); add(E128[2], 512, 0)
  add({ 8, 1000, 1032 }, 300, 0)       -- tails, some 128-row tiles past the counts
  return t
end

local DOMAIN = { "E >= 1 and E <= 256", "N >= 8 and N % 8 == 0", "K >= 8 and K % 8 == 0" }
-- the TMA epilogue's and producer's boxes are 64 wide in k: K of at least one box
local REQUIRES = { "USE_TMA == 0 or K >= 64" }

-- the cp.async producer: runs every problem of the domain (no tensor map is read)
local FALLBACK = { BLOCK_M = 64, BLOCK_N = 128, CONSUMERS = 1, STAGES = 4, WS = 1, USE_TMA = 0, PRODUCER_WARPS = 4,
                   PERSISTENT = 0, RASTER = 1 }

-- tensor maps over the 2-D views (grouped_sm90.cuh): boxes clipped to the tensors, as the kernel
-- expects (its expect_tx counts the clipped boxes)
local function tensormaps(rows)
  return {
    { "tmA", tensormap = { tensor = "a", swizzle = 128, dims = { "K", rows },
      box = { "min(64, K)", "min(BLOCK_M, " .. rows .. ")" } } },
    { "tmW", tensormap = { tensor = "w", swizzle = 128, dims = { "K", "E * N" },
      box = { "min(64, K)", "min(BLOCK_N, E * N)" } } },
    { "tmC", tensormap = { tensor = "c", swizzle = 128, dims = { "N", rows },
      box = { "min(64, N)", "min(64, " .. rows .. ")" } } },
  }
end

local function args(layout)
  local t
  if layout == "contiguous" then
    t = {
      { "a", tensor = "bf16", shape = { "T", "K" }, init = { "normal", 0, 1 } },
      { "w", tensor = "bf16", shape = { "E", "N", "K" }, init = { "normal", 0, 1 } },
      { "c", tensor = "bf16", shape = { "T", "N" }, output = true },
      { "offsets", tensor = "i32", shape = { "E + 1" }, init = { "offsets", "T", "min_tokens" } },
      { "E", scalar = "i32", value = "E" },
      { "M", scalar = "i32", value = "T" },
    }
  else
    t = {
      { "a", tensor = "bf16", shape = { "E", "cap", "K" }, init = { "normal", 0, 1 } },
      { "w", tensor = "bf16", shape = { "E", "N", "K" }, init = { "normal", 0, 1 } },
      { "c", tensor = "bf16", shape = { "E", "cap", "N" }, output = true },
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
    kernel = "grouped_gemm_reference",
    grid = { "(N + 15) // 16", "(" .. rows .. " + 15) // 16", 1 },
    block = { 16, 16, 1 },
    shared = 0,
    defines = { LAYOUT = layout == "contiguous" and "0" or "1" },
  }
end

-- as recipes/gemm.lua: a, w ~ N(0, 1), outputs ~ N(0, K); both sides round one fp32 sum to bf16 in
-- another addition order (one ulp apart near a rounding boundary: 2..4 at K = 14336)
local tolerance = { rel_l2 = 1e-2, max_abs = 8 }

local function recipe(layout)
  local contiguous = layout == "contiguous"
  return {
    name = contiguous and "moe.grouped" or "moe.grouped_masked",
    template = "templates/gemm/grouped_sm90.cuh",
    kernel = "grouped_gemm_bf16",
    params = params,
    constraints = constraints,
    domain = contiguous and { DOMAIN[1], DOMAIN[2], DOMAIN[3], "T >= 1" } or { DOMAIN[1], DOMAIN[2], DOMAIN[3], "cap >= 1" },
    requires = REQUIRES,
    applies = applies(contiguous and function(p) return p.T / p.E end or function(p) return p.cap / 2 end),
    defines = { LAYOUT = contiguous and "0" or "1", ZERO_PAD = "1" },
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
      flops = "2 * T * N * K",
      bytes = "2 * (T * K + (min_tokens > 0 and E or 0) * N * K + T * N)",
    } or {
      flops = "2 * E * (min_count + cap) / 2 * N * K",
      bytes = "2 * (E * (min_count + cap) / 2 * K + E * N * K + E * cap * N)",
    },
  }
end

return { recipe("contiguous"), recipe("masked") }
