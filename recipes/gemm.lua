-- gemm.lua: bf16 GEMM, fp32 accumulation, bf16 output: c[M][N] = a[M][K] @ B, templates/gemm/gemm.cuh.
-- B is row-major b[K][N] (b_layout = "row") or column-major, stored b[N][K] (b_layout = "col", the
-- layout of nn.Linear weights). Two recipes:
--   gemm         one kernel per variant: PATH 0 (mma.sync + ldmatrix + cp.async ring), PATH 1 (wgmma,
--                sm_90a, optionally warp-specialized / persistent), PATH 2 (CUDA-core GEMV, M <= 8)
--   gemm.splitk  decode shapes only: the same paths with K split over grid.y (SPLIT_K), fp32 partials
--                in the `ws` scratch, then gemm_splitk_reduce; or (SPLIT_CLUSTER, wgmma with a
--                producer) the splits of a tile as one cluster adding their tiles in shared memory.
--                A separate recipe so that variants without split-K never pay for a second kernel.
--   gemm.gemv_rows  M = 1 with row-major b only: a GEMV whose K split is summed over a thread-block
--                cluster in one launch (templates/gemm/gemv_rows.cuh; end of this file).
-- PATH 1 with WS = 1 has two producers: cp.async warps, or (USE_TMA = 1) one thread issuing bulk
-- tensor copies (TMA) through the tensor maps tmA and tmB that the worker builds per variant
-- (docs/tensormap-args.md). Every kernel (and the reference) takes three maps (TMA_ARGS = 2): tmA, tmB,
-- and tmC, which USE_TMA without split-K stores c through (the epilogue's 64 x 64 boxes).
-- Tile shapes are whitelisted per path below; `applies` keeps large problems on a measured short list
-- (TMA producers first; cp.async, wgmma without producer and mma.sync for comparison) and decode
-- problems (M <= 128) on small tiles, GEMV and split-K. The space is sized so that one exhaustive run
-- of every problem takes minutes on one GPU (tools/bench/device_gemm_run.sh); `gemm_space
-- recipes/gemm.lua` (tools/check/gemm_space.c) prints the variants per problem.
--
-- Domain: any M >= 1, N and K multiples of 8 (rows of whole 16-byte chunks). Every path takes tails
-- (zero-filled loads, clipped stores, ceil-divided grids: templates/gemm/gemm.cuh); `requires` holds
-- what a config needs of a problem to run it correctly, as expressions libtunert checks, so that a
-- bundled entry serves untuned problems; `applies` only prunes what `tune run` tries. Launch geometry,
-- shapes, tensor-map boxes and defines are expressions for the same reason (an enum dim such as
-- b_layout is compared with its value's string, 'col'). `fallback` is a PATH 0 config that runs every
-- problem of the domain.

local SMEM_LIMIT = 227 * 1024  -- sm_90 opt-in maximum per block; the templates static_assert the same

-- PATH 0 shapes: { BLOCK_M, BLOCK_N, WARPS_M, WARPS_N }; warp tiles of 64x64 for the large ones.
local SHAPES_SM80 = {
  { 256, 128, 4, 2 }, { 128, 256, 2, 4 }, { 128, 128, 2, 2 },           -- large problems
  { 64, 128, 2, 2 }, { 64, 64, 2, 2 }, { 32, 128, 1, 4 },                -- decode (M <= 128)
  { 16, 128, 1, 4 }, { 16, 64, 1, 4 },
}
-- PATH 1 shapes: { BLOCK_M, BLOCK_N, CONSUMERS }; each consumer warpgroup owns 64 or 128 rows.
local SHAPES_SM90 = {
  { 128, 256, 2 }, { 256, 128, 2 }, { 128, 128, 2 }, { 128, 128, 1 },    -- large problems
  { 64, 256, 1 }, { 64, 128, 1 },                                        -- decode (M 64, 128)
}

local SHAPES_PINGPONG = { { 128, 128 }, { 64, 256 } }  -- WS = 2: one warpgroup's tile

local function in_list(list, ...)
  local want = { ... }
  for _, s in ipairs(list) do
    local ok = true
    for i = 1, #want do if s[i] ~= want[i] then ok = false break end end
    if ok then return true end
  end
  return false
end

-- Dynamic shared memory of a variant (must match each path's kSmemBytes).
local function smem_sm80(c, b_col, split)
  local pad = c.SWIZZLE == 1 and 0 or 8
  local a = c.BLOCK_M * (c.BLOCK_K + pad)
  local b = b_col and c.BLOCK_N * (c.BLOCK_K + pad) or c.BLOCK_K * (c.BLOCK_N + pad)
  local pipe = c.STAGES * (a + b) * 2
  local ctile = split and 0 or c.BLOCK_M * (c.BLOCK_N + 8) * 2  -- bf16 epilogue staging
  return math.max(pipe, ctile)
end
-- (the TMA epilogue's boxes: two 64 x 64 bf16 boxes per consumer warpgroup, USE_TMA without split-K)
local function smem_sm90(c, split)
  local epi = (c.USE_TMA == 1 and not split) and c.CONSUMERS * 2 * 8192 or 0
  return 1024 + c.STAGES * (c.BLOCK_M + c.BLOCK_N) * 128 + epi + 2 * c.STAGES * 8 + (c.WS == 2 and 16 or 0)
end
local function smem_bytes(c, b_col, split)
  if c.PATH == 0 then return smem_sm80(c, b_col, split) end
  if c.PATH == 1 then return smem_sm90(c, split) end
  return 0
end

local function threads(c)
  if c.PATH == 0 then return 32 * c.WARPS_M * c.WARPS_N end
  if c.PATH == 1 then return 128 * (c.CONSUMERS + (c.WS > 0 and 1 or 0)) end
  return 32 * c.GEMV_WARPS
end

-- The same numbers as expressions over params and dims (launch geometry that libtunert evaluates).
local B_COL = "(b_layout == 'col')"
local PAD = "(SWIZZLE == 1 and 0 or 8)"
local function smem_expr(split)
  local a = "BLOCK_M * (BLOCK_K + " .. PAD .. ")"
  local b = B_COL .. " and BLOCK_N * (BLOCK_K + " .. PAD .. ") or BLOCK_K * (BLOCK_N + " .. PAD .. ")"
  local sm80 = "STAGES * (" .. a .. " + (" .. b .. ")) * 2"
  if not split then sm80 = "max(" .. sm80 .. ", BLOCK_M * (BLOCK_N + 8) * 2)" end
  local epi = split and "0" or "(USE_TMA == 1 and CONSUMERS * 2 * 8192 or 0)"
  local sm90 = "1024 + STAGES * (BLOCK_M + BLOCK_N) * 128 + " .. epi .. " + 2 * STAGES * 8 + (WS == 2 and 16 or 0)"
  return "PATH == 0 and " .. sm80 .. " or PATH == 1 and " .. sm90 .. " or 0"
end
local THREADS = "PATH == 0 and 32 * WARPS_M * WARPS_N or PATH == 1 and 128 * (CONSUMERS + (WS > 0 and 1 or 0)) or 32 * GEMV_WARPS"
local TILES = "((M + BLOCK_M - 1) // BLOCK_M) * ((N + BLOCK_N - 1) // BLOCK_N)"
local GEMV_COLS_PER_BLOCK = "(" .. B_COL .. " and GEMV_WARPS * GEMV_COLS or 64 * GEMV_COLS)"
-- grid.x without persistence (split-K: grid.y = SPLIT_K)
local GRID_X = "PATH == 2 and (N + " .. GEMV_COLS_PER_BLOCK .. " - 1) // " .. GEMV_COLS_PER_BLOCK .. " or " .. TILES
-- persistent: persistent_blocks below, on the device's sm_count
local SM90_THREADS = "128 * (CONSUMERS + (WS > 0 and 1 or 0))"
local SM90_REGS = "(SETMAXNREG == 1 and 168 or min(255, (BLOCK_M // CONSUMERS // 64) * (BLOCK_N // 2) + 64))"
local SM90_SMEM = "(1024 + STAGES * (BLOCK_M + BLOCK_N) * 128 + (USE_TMA == 1 and CONSUMERS * 2 * 8192 or 0) + 2 * STAGES * 8 + (WS == 2 and 16 or 0))"
local PER_SM = "max(1, min(233472 // (" .. SM90_SMEM .. " + 1024), 2048 // " .. SM90_THREADS .. ", 65536 // ("
    .. SM90_THREADS .. " * " .. SM90_REGS .. ")))"
local GRID_X_PERSISTENT = "PATH == 1 and PERSISTENT == 1 and min(" .. TILES .. ", sm_count * " .. PER_SM .. ") or " .. GRID_X

-- Blocks of a persistent variant: one wave of resident blocks (shared memory, threads and an estimate
-- of registers: 168 per thread with setmaxnreg, else accumulators + 64), at most one per tile.
local function persistent_blocks(c, d, tiles)
  local per_sm = math.min(233472 // (smem_sm90(c) + 1024), 2048 // threads(c))
  local regs = c.SETMAXNREG == 1 and 168
      or math.min(255, (c.BLOCK_M // c.CONSUMERS // 64) * (c.BLOCK_N // 2) + 64)
  per_sm = math.max(1, math.min(per_sm, 65536 // (threads(c) * regs)))
  return math.min(tiles, d.sm_count * per_sm)
end

local function tiles_of(c, p)
  return ((p.M + c.BLOCK_M - 1) // c.BLOCK_M) * ((p.N + c.BLOCK_N - 1) // c.BLOCK_N)
end

local function grid(c, p, d, split)
  split = split and c.SPLIT_K or 1
  if c.PATH == 2 then
    local per_block = p.b_layout == "col" and c.GEMV_WARPS * c.GEMV_COLS or 64 * c.GEMV_COLS
    return { (p.N + per_block - 1) // per_block, split, 1 }
  end
  local tiles = tiles_of(c, p)
  if c.PATH == 1 and c.PERSISTENT == 1 then return { persistent_blocks(c, d, tiles), 1, 1 } end
  return { tiles, split, 1 }
end

-- ---------------------------------------------------------------------------------------------
-- Parameters. Every parameter reaches the template as a define; a parameter that a path does not
-- read is pinned to its first value for that path (constraints below), so no config is repeated.

local function params(split)
  local p = {
    { "PATH",           { 0, 1, 2 } },          -- 0 mma.sync, 1 wgmma (sm_90a), 2 GEMV
    { "BLOCK_M",        { 16, 32, 64, 128, 256 } },
    { "BLOCK_N",        { 64, 128, 256 } },
    { "WARPS_M",        { 1, 2, 4 } },          -- PATH 0 warp grid
    { "WARPS_N",        { 1, 2, 4 } },
    { "CONSUMERS",      { 1, 2 } },             -- PATH 1 consumer warpgroups
    { "BLOCK_K",        { 64, 32 } },           -- PATH 1, 2: 64
    { "STAGES",         { 2, 3, 4, 5 } },       -- cp.async ring depth (PATH 1: 3..5)
    { "SWIZZLE",        { 1, 0 } },             -- PATH 0: 1 XOR-swizzled rows, 0 padded rows
    { "WS",             { 0, 1, 2 } },          -- PATH 1: 1 = producer warpgroup + consumers, 2 = same, ping-pong
    { "PRODUCER_WARPS", { 1, 4 } },             -- PATH 1, WS = 1: warps of the producer that copy
    { "SETMAXNREG",     { 0, 1 } },             -- PATH 1, WS = 1: producer 40/56 regs, consumers 232/240
    { "USE_TMA",        { 0, 1 } },             -- PATH 1, WS = 1, SETMAXNREG = 1: TMA producer (one thread)
    { "PERSISTENT",     { 0, 1 } },             -- PATH 1: one wave of blocks looping over tiles
    { "RASTER",         { 1, 8 } },             -- tile order: row-major or groups of 8 tile rows
    { "GEMV_WARPS",     { 4, 8 } },             -- PATH 2
    { "GEMV_COLS",      { 1, 2, 4 } },
    { "GEMV_UNROLL",    { 2, 4 } },
  }
  if split then
    table.insert(p, { "SPLIT_K", { 2, 4, 8, 16 } })
    -- PATH 1 with a TMA producer: 1 = the splits of a tile form a cluster and add their tiles through
    -- distributed shared memory (no fp32 partials, no reduce kernel); 0 = partials + gemm_splitk_reduce
    table.insert(p, { "SPLIT_CLUSTER", { 0, 1 } })
  end
  return p
end

local constraints = {
  -- tile shapes (PATH 2 pins them)
  function(c)
    if c.PATH == 0 then return c.CONSUMERS == 1 and in_list(SHAPES_SM80, c.BLOCK_M, c.BLOCK_N, c.WARPS_M, c.WARPS_N) end
    if c.PATH == 1 and c.WS == 2 then  -- ping-pong: each consumer warpgroup holds a whole tile (<= 128 accumulators)
      return c.WARPS_M == 1 and c.WARPS_N == 1 and c.CONSUMERS == 2 and in_list(SHAPES_PINGPONG, c.BLOCK_M, c.BLOCK_N)
    end
    if c.PATH == 1 then return c.WARPS_M == 1 and c.WARPS_N == 1 and in_list(SHAPES_SM90, c.BLOCK_M, c.BLOCK_N, c.CONSUMERS) end
    return c.BLOCK_M == 16 and c.BLOCK_N == 64 and c.WARPS_M == 1 and c.WARPS_N == 1 and c.CONSUMERS == 1
  end,
  function(c) return c.PATH == 0 or c.BLOCK_K == 64 end,
  -- ring depth: 32-wide k slices want 3..5 stages, 64-wide 2..4 (5 for tiles of <= 64 rows);
  -- PATH 1 needs >= 3 (its plain pipeline runs STAGES - 2 slices ahead); PATH 2 has no ring.
  function(c)
    if c.PATH == 0 then
      if c.BLOCK_K == 32 then return c.STAGES >= 3 end
      return c.STAGES <= 4 or c.BLOCK_M <= 64
    end
    if c.PATH == 1 then return c.STAGES >= 3 end
    return c.STAGES == 2
  end,
  function(c) return c.PATH == 0 or c.SWIZZLE == 1 end,
  function(c) return c.PATH ~= 0 or smem_sm80(c, false, false) <= SMEM_LIMIT and smem_sm80(c, true, false) <= SMEM_LIMIT end,
  function(c) return c.PATH ~= 1 or smem_sm90(c) <= SMEM_LIMIT end,
  -- PATH 1 warp roles. WS = 0: no producer, not persistent. WS = 1: setmaxnreg with 1 or 4 copying
  -- producer warps, plain or persistent; without setmaxnreg (one consumer warpgroup only) 1 producer
  -- warp, not persistent.
  function(c)
    if c.PATH ~= 1 then return c.WS == 0 and c.PRODUCER_WARPS == 1 and c.SETMAXNREG == 0 and c.PERSISTENT == 0 end
    if c.WS == 0 then return c.PRODUCER_WARPS == 1 and c.SETMAXNREG == 0 and c.PERSISTENT == 0 end
    if c.WS == 2 then return c.SETMAXNREG == 1 and c.PRODUCER_WARPS == 1 and c.PERSISTENT == 1 and c.USE_TMA == 1 end
    -- without setmaxnreg two consumer warpgroups and the producer share 168 registers: spills
    if c.SETMAXNREG == 0 then return c.CONSUMERS == 1 and c.PRODUCER_WARPS == 1 and c.PERSISTENT == 0 end
    return true
  end,
  -- the TMA producer is one thread of a setmaxnreg producer warpgroup
  function(c) return c.USE_TMA == 0 or (c.PATH == 1 and c.WS >= 1 and c.SETMAXNREG == 1 and c.PRODUCER_WARPS == 1) end,
  function(c) return c.PATH ~= 2 or c.RASTER == 1 end,
  function(c) return c.PATH == 2 or (c.GEMV_WARPS == 4 and c.GEMV_COLS == 1 and c.GEMV_UNROLL == 2) end,
}

local function is_large(p) return p.M >= 256 end

-- Large problems (M >= 256): a short list, because a variant costs about a second at 8192^3
-- (verification compares 64 M outputs). Most of it is the TMA producer, the fastest path
-- (docs/tensormap-args.md); the other paths keep a few configs each for comparison, in the grouped
-- tile order where they do best.
local function large_short_list(c)
  if c.BLOCK_M < 128 and c.WS ~= 2 then return false, "large problem: tiles of >= 128 rows only (ping-pong: 64)" end
  if c.PATH == 1 and c.USE_TMA == 1 then
    if c.BLOCK_M == 128 and c.BLOCK_N == 128 and (c.STAGES < 4 or c.RASTER ~= 8) then
      return false, "large problems: 128 x 128 TMA tiles 4..5 deep, grouped order"
    end
    return true
  end
  if c.RASTER ~= 8 then return false, "large problems: only TMA variants try row-major tile order" end
  if c.BLOCK_M * c.BLOCK_N < 128 * 256 then return false, "large problems: only TMA variants try 128 x 128 tiles" end
  if c.PATH == 0 then
    if c.SWIZZLE ~= 1 then return false, "large problems: mma.sync with swizzled rows only" end
    if (c.BLOCK_K == 64 and c.STAGES ~= 3) or (c.BLOCK_K == 32 and c.STAGES ~= 4) then
      return false, "large problems: mma.sync 3 deep (64-wide slices) or 4 deep (32-wide)"
    end
    return true
  end
  if c.PATH == 1 and c.WS == 0 then
    if c.STAGES ~= 4 then return false, "large problems: wgmma without producer 4 deep only" end
    return true
  end
  if c.PATH == 1 then
    if c.SETMAXNREG == 0 then return false, "large problems: the cp.async producer with setmaxnreg only" end
    if c.STAGES ~= 4 then return false, "large problems: the cp.async producer 4 deep only" end
    return true
  end
  return false, "large problems: no GEMV"
end

-- Which configs serve which problem (shape classes, divisibility), with the reason when not.
local function applies_common(c, p, split)
  local b_col = p.b_layout == "col"
  if c.PATH == 2 then
    if p.M > 8 then return false, "GEMV path: M > 8 (GEMV_M is at most 8)" end
    return true
  end
  if smem_bytes(c, b_col, split) > SMEM_LIMIT then return false, "shared memory over 227 KiB" end
  if is_large(p) then
    local ok, why = large_short_list(c)
    if not ok then return false, why end
  else
    -- decode: tiles of at most the next power of two >= M rows, at least a quarter of it
    local mp = 16
    while mp < p.M do mp = mp * 2 end
    if c.BLOCK_M > mp or c.BLOCK_M < mp // 4 then return false, "decode: BLOCK_M far from M" end
    if c.RASTER ~= 1 then return false, "decode: one or two tile rows, tile order does not matter" end
    if c.PATH == 0 and (c.SWIZZLE ~= 1 or c.BLOCK_K ~= 64) then return false, "decode: PATH 0 with swizzled 64-wide slices only" end
    if c.PATH == 1 and p.M < 64 then return false, "decode: wgmma tiles of 64 rows for M >= 64 only" end
    if c.PATH == 1 and c.WS == 1 and c.USE_TMA == 0 and c.PRODUCER_WARPS ~= 4 then return false, "decode: cp.async producer with 4 copying warps only" end
    if c.PATH == 1 and c.USE_TMA == 1 and c.STAGES == 3 then return false, "decode: TMA rings of 4..5 slots" end
  end
  return true
end

local function problems_large()
  local t = {}
  for _, s in ipairs({ { 8192, 8192, 8192 }, { 4096, 4096, 4096 }, { 4096, 14336, 4096 } }) do
    for _, lay in ipairs({ "row", "col" }) do
      t[#t + 1] = { name = string.format("m%dn%dk%d_%s", s[1], s[2], s[3], lay), M = s[1], N = s[2], K = s[3], b_layout = lay }
    end
  end
  -- the decoder block's other projections (examples/decoder_block, Llama-3-8B shapes, 4096 tokens):
  -- fused QKV (4096 + 2 x 8 KV heads x 128) and MLP down; weights stored [N][K] as nn.Linear keeps them
  for _, s in ipairs({ { 4096, 6144, 4096 }, { 4096, 4096, 14336 } }) do
    t[#t + 1] = { name = string.format("m%dn%dk%d_col", s[1], s[2], s[3]), M = s[1], N = s[2], K = s[3], b_layout = "col" }
  end
  return t
end
-- Decode shapes at the model's N x K; ms: the M buckets (powers of two).
local DECODE_M = { 1, 2, 4, 8, 16, 32, 64, 128 }
local function problems_decode(ms)
  local t = {}
  for _, m in ipairs(ms or DECODE_M) do
    for _, nk in ipairs({ { 8192, 8192 }, { 14336, 4096 }, { 4096, 14336 } }) do
      for _, lay in ipairs({ "row", "col" }) do
        t[#t + 1] = { name = string.format("m%dn%dk%d_%s", m, nk[1], nk[2], lay), M = m, N = nk[1], K = nk[2], b_layout = lay }
      end
    end
  end
  return t
end

-- Problems at shapes that are no tile's multiple (N, K multiples of 8 only), so that every path's
-- tails are verified against the reference: large tiles (M 1000, 3000), decode tiles and split-K
-- (M 37, 100), the GEMVs (M 5; K 1056 = 32 x 33 for gemv_rows' K rule).
local TAILS = { { 1000, 1000, 1000 }, { 3000, 1000, 1032 }, { 37, 4104, 4096 }, { 100, 1000, 1032 }, { 5, 4104, 1056 } }
local function problems_tails(max_m)
  local t = {}
  for _, s in ipairs(TAILS) do
    if s[1] <= max_m then
      for _, lay in ipairs({ "row", "col" }) do
        t[#t + 1] = { name = string.format("m%dn%dk%d_%s", s[1], s[2], s[3], lay), M = s[1], N = s[2], K = s[3], b_layout = lay }
      end
    end
  end
  return t
end

local DOMAIN = { "M >= 1", "N >= 8 and N % 8 == 0", "K >= 8 and K % 8 == 0" }

-- Correctness rules (every path takes tails): the GEMV's compile-time rows, and TMA boxes no larger
-- than the tensor (the driver is not asked to build maps with a box past a whole dim).
local REQUIRES = {
  "PATH ~= 2 or M <= 8",
  "USE_TMA == 0 or (M >= BLOCK_M and N >= BLOCK_N and K >= 64)",
}

local function args(split)
  local ws = split and { "SPLIT_CLUSTER == 1 and 1 or SPLIT_K", "SPLIT_CLUSTER == 1 and 1 or M", "SPLIT_CLUSTER == 1 and 1 or N" }
      or { 1 }
  return {
    -- the second input set spans ten binary orders of magnitude (|x| in [2^-9, 2^1], both signs):
    -- sums dominated by a few large products, where lost low-order bits show
    { "a", tensor = "bf16", shape = { "M", "K" }, init = { "normal", 0, 1 }, adversarial = { "wide", -9, 1 } },
    { "b", tensor = "bf16", init = { "normal", 0, 1 }, adversarial = { "wide", -9, 1 },
      shape = { B_COL .. " and N or K", B_COL .. " and K or N" } },
    { "c", tensor = "bf16", shape = { "M", "N" }, output = true },
    -- fp32 partial sums ws[SPLIT_K][M][N] (gemm.splitk); one unused float for gemm
    { "ws", tensor = "f32", scratch = true, shape = ws },
    { "M", scalar = "i32", value = "M" },
    { "N", scalar = "i32", value = "N" },
    { "K", scalar = "i32", value = "K" },
    -- tensor maps of a and b for the TMA producer (docs/tensormap-args.md): 128-byte swizzled boxes
    -- of 64 k x BLOCK_M rows (a), 64 k x BLOCK_N rows (b stored [N][K]) or 64 n x 64 k (b [K][N],
    -- one copy per 64-column block). Variants without USE_TMA get a map too (every kernel takes
    -- them); theirs is clipped to the tensor so that it always builds (a box larger than the tensor
    -- is the driver's to refuse, and M may be 1).
    { "tmA", tensormap = { tensor = "a", swizzle = 128,
      box = { "USE_TMA == 1 and 64 or min(64, K)", "USE_TMA == 1 and BLOCK_M or min(BLOCK_M, M)" } } },
    { "tmB", tensormap = { tensor = "b", swizzle = 128,
      box = { "USE_TMA == 1 and 64 or min(64, " .. B_COL .. " and K or N)",
              B_COL .. " and (USE_TMA == 1 and BLOCK_N or min(BLOCK_N, N)) or (USE_TMA == 1 and 64 or min(64, K))" } } },
    -- tensor map of c for the TMA epilogue (USE_TMA without split-K: 64 x 64 boxes stored from shared memory)
    { "tmC", tensormap = { tensor = "c", swizzle = 128,
      box = { "USE_TMA == 1 and 64 or min(64, N)", "USE_TMA == 1 and 64 or min(64, M)" } } },
  }
end

local reference = {
  source = "templates/gemm/reference.cuh",
  kernel = "gemm_reference",
  grid = function(p) return { (p.N + 15) // 16, (p.M + 15) // 16, 1 } end,
  block = { 16, 16, 1 },
  shared = 0,
  defines = function(p) return { B_COL = p.b_layout == "col" and 1 or 0, TMA_ARGS = 2 } end,
}

-- GEMV_M: the GEMV's compile-time rows, M rounded up to a power of two (one binary per bucket);
-- 0 (unread) on the other paths
local defines = {
  B_COL = B_COL .. " and 1 or 0",
  TMA_ARGS = "2",
  GEMV_M = "PATH == 2 and (M <= 1 and 1 or M <= 2 and 2 or M <= 4 and 4 or 8) or 0",
}

-- The generic entry of gemm and gemm.splitk: mma.sync 64 x 128 tiles, 2 x 2 warps, a 3-deep ring of
-- 64-wide slices; zero-filled edges make it run every problem of the domain.
local FALLBACK = {
  PATH = 0, BLOCK_M = 64, BLOCK_N = 128, WARPS_M = 2, WARPS_N = 2, CONSUMERS = 1, BLOCK_K = 64, STAGES = 3,
  SWIZZLE = 1, WS = 0, PRODUCER_WARPS = 1, SETMAXNREG = 0, USE_TMA = 0, PERSISTENT = 0, RASTER = 1,
  GEMV_WARPS = 4, GEMV_COLS = 1, GEMV_UNROLL = 2,
}

-- With a, b ~ N(0, 1) an output is ~ N(0, K): |c| reaches ~6 sqrt(K) ~ 700 at K = 14336, where one
-- bf16 ulp is 4. Variants and the reference both round an fp32 sum once to bf16 and differ in the
-- order of the fp32 additions (and split-K partials), so outputs near a rounding boundary differ by
-- one ulp: 2..4 at the largest outputs. max_abs is absolute in the worker (tuner/inputs.c), hence 8
-- (2 ulps at |c| in [512, 1024)); a missing 64-wide k slice moves outputs by ~N(0, 64), 5 sigma = 40.
-- rel_l2 of a correct variant is ~1e-3 (bf16 rounding of the output). honest: an fp32 sum rounded
-- once sits far below the error one rounding is expected to cost (it differs from the reference only
-- near rounding boundaries); partials rounded to bf16 before they are added round every output
-- twice, and honest = 1.25 does not allow for that second rounding (docs/measurement.md).
local tolerance = { rel_l2 = 1e-2, max_abs = 8, honest = 1.25 }

local metrics = {
  flops = function(p) return 2 * p.M * p.N * p.K end,
  bytes = function(p) return 2 * (p.M * p.K + p.K * p.N + p.M * p.N) end,  -- a, b read and c written once
}

local function all_problems()
  local t = problems_large()
  for _, p in ipairs(problems_decode()) do t[#t + 1] = p end
  for _, p in ipairs(problems_tails(1e9)) do t[#t + 1] = p end
  return t
end

local gemm = {
  name = "gemm",
  template = "templates/gemm/gemm.cuh",
  kernel = "gemm_bf16",
  params = params(false),
  constraints = constraints,
  domain = DOMAIN,
  requires = REQUIRES,
  applies = function(c, p) return applies_common(c, p, false) end,
  defines = defines,
  fallback = FALLBACK,
  problems = all_problems(),
  launch = {
    grid = { GRID_X_PERSISTENT, 1, 1 },
    block = { THREADS, 1, 1 },
    shared = smem_expr(false),
  },
  args = args(false),
  reference = reference,
  tolerance = tolerance,
  metrics = metrics,
}

-- Split-K for decode shapes: small tiles, GEMV and the 64-row wgmma tiles, K split 2..16 ways.
local splitk_constraints = {}
for i, f in ipairs(constraints) do splitk_constraints[i] = f end
-- no persistence with split-K (the template static_asserts it), one producer variant, fewer rings
splitk_constraints[#splitk_constraints + 1] = function(c) return c.PERSISTENT == 0 end
splitk_constraints[#splitk_constraints + 1] = function(c) return c.PATH ~= 1 or c.WS == 0 or c.SETMAXNREG == 1 end
splitk_constraints[#splitk_constraints + 1] = function(c)
  if c.PATH == 0 then return c.STAGES == 3 or c.STAGES == 5 end
  if c.PATH == 1 then return c.STAGES == 4 end
  return true
end
splitk_constraints[#splitk_constraints + 1] = function(c) return c.PATH ~= 2 or c.GEMV_UNROLL == 2 end
splitk_constraints[#splitk_constraints + 1] = function(c)
  -- (with the cp.async producer and two consumer warpgroups it spills: TMA producers only)
  return c.SPLIT_CLUSTER == 0 or (c.PATH == 1 and c.WS == 1 and c.USE_TMA == 1 and c.SPLIT_K <= 8)
end

local gemm_splitk = {
  name = "gemm.splitk",
  template = "templates/gemm/gemm.cuh",
  params = params(true),
  constraints = splitk_constraints,
  applies = function(c, p)
    local ok, why = applies_common(c, p, true)
    if not ok then return ok, why end
    -- partial sums cost 8 bytes (write + read) per split per output: keep them under ~1/4 of b
    if c.SPLIT_CLUSTER == 0 and 8 * c.SPLIT_K * p.M * p.N > (2 * p.K * p.N) // 4 then
      return false, "split-K partials would exceed b / 4 in bytes"
    end
    -- no more than ~2 waves of blocks: more splits only add partial traffic
    local blocks = grid(c, p, { sm_count = 132 }, true)
    if blocks[1] * c.SPLIT_K > 2 * 132 * 4 and c.SPLIT_K > 2 then return false, "enough blocks without this many splits" end
    return true
  end,
  domain = DOMAIN,
  requires = REQUIRES,
  defines = defines,
  fallback = (function()
    local f = {}
    for k, v in pairs(FALLBACK) do f[k] = v end
    f.SPLIT_K, f.SPLIT_CLUSTER = 2, 0
    return f
  end)(),
  -- decode buckets 1, 16, 64, 128 (gemm has the others) and the tails of M <= 128
  problems = (function()
    local t = problems_decode({ 1, 16, 64, 128 })
    for _, p in ipairs(problems_tails(128)) do t[#t + 1] = p end
    return t
  end)(),
  launch = {
    { kernel = "gemm_bf16",
      grid = { GRID_X, "SPLIT_K", 1 },
      block = { THREADS, 1, 1 },
      shared = smem_expr(true),
      cluster = { 1, "SPLIT_CLUSTER == 1 and SPLIT_K or 1", 1 } },
    { kernel = "gemm_splitk_reduce",  -- not launched (no blocks) when the cluster adds the splits
      grid = { "SPLIT_CLUSTER == 1 and 0 or max(1, (M * N // 8 + 255) // 256)", 1, 1 },
      block = { 256, 1, 1 },
      shared = 0 },
  },
  args = args(true),
  reference = reference,
  tolerance = tolerance,
  metrics = metrics,
}

-- Row-major b at M <= 8 (templates/gemm/gemv_rows.cuh): a GEMV whose warps each read one 256- or
-- 512-byte segment of a k row per load, with K split over the CTAs of a thread-block cluster and
-- summed through distributed shared memory: one launch, where gemm.splitk's row-major GEMV needs the
-- fp32 workspace and the reduce kernel to spread a 1 x N output over the GPU.
-- M = 1 at every shape, the other GEMV_M buckets (2, 4, 8) at 8192 x 8192, the tail problem
local function decode_rows_problems()
  local t = {}
  for _, p in ipairs(problems_decode()) do
    if p.M <= 8 and p.b_layout == "row" and (p.M == 1 or p.N == 8192) then t[#t + 1] = p end
  end
  for _, p in ipairs(problems_tails(8)) do
    if p.b_layout == "row" then t[#t + 1] = p end
  end
  return t
end

-- the gemm kernels' arguments, with tensor maps whose boxes do not depend on tile parameters (the
-- kernel takes them and never reads them)
local function args_gemv_rows()
  local t = {}
  local boxes = { a = { "min(64, K)", "min(64, M)" }, b = { "min(64, N)", "min(64, K)" }, c = { "min(64, N)", "min(64, M)" } }
  for i, a in ipairs(args(false)) do
    if a.tensormap then
      local box = boxes[a.tensormap.tensor]
      t[i] = { a[1], tensormap = { tensor = a.tensormap.tensor, swizzle = a.tensormap.swizzle, box = box } }
    else
      t[i] = a
    end
  end
  return t
end

local gemm_gemv_rows = {
  name = "gemm.gemv_rows",
  template = "templates/gemm/gemv_rows.cuh",
  kernel = "gemv_rows",
  params = {
    { "GR_WARPS",  { 8, 16 } },
    { "GR_VEC",    { 16, 8 } },      -- bytes per lane and load: a warp's load is 32 * GR_VEC contiguous bytes
    { "GR_SEGS",   { 1, 2, 4 } },    -- such loads side by side per k row: tiles of 16 * GR_VEC * GR_SEGS columns
    { "GR_UNROLL", { 4, 8, 16 } },   -- k rows per step; a warp has one or two steps in flight
    { "CLUSTER",   { 1, 2, 4, 8 } }, -- CTAs sharing a tile's K
  },
  -- a step's loads, held twice (the next step's), in at most 2 x 128 bytes of registers per lane
  constraints = { function(c) return c.GR_UNROLL * c.GR_VEC * c.GR_SEGS <= 128 end },
  -- N tails are masked; K is split evenly over the cluster's warps in whole GR_UNROLL steps
  domain = { "b_layout == 'row'", "M >= 1 and M <= 8", "N >= 8 and N % 8 == 0", "K >= 32 and K % 32 == 0" },
  requires = { "K % (CLUSTER * GR_WARPS * GR_UNROLL) == 0" },
  fallback = { GR_WARPS = 8, GR_VEC = 16, GR_SEGS = 1, GR_UNROLL = 4, CLUSTER = 1 },
  defines = { B_COL = "0", GEMV_M = "M <= 1 and 1 or M <= 2 and 2 or M <= 4 and 4 or 8" },
  problems = decode_rows_problems(),
  launch = {
    grid = { "(N + 16 * GR_VEC * GR_SEGS - 1) // (16 * GR_VEC * GR_SEGS) * CLUSTER", 1, 1 },
    block = { "32 * GR_WARPS", 1, 1 },
    shared = 0,
    cluster = { "CLUSTER", 1, 1 },  -- consecutive blocks: one tile's k ranges
  },
  args = args_gemv_rows(),
  reference = reference,
  tolerance = tolerance,
  metrics = metrics,
}

return { gemm, gemm_splitk, gemm_gemv_rows }
