-- gemm/skinny.lua: the decode-shape GEMM of issue 5 (M <= 128), templates/gemm/skinny.cuh. Same
-- problems, names, inputs, reference and tolerance as recipes/gemm.lua's decode problems, so results
-- compare per problem; a recipe file of its own so that recipes/gemm.lua's recordings keep their
-- source hash (`tune run recipes/gemm/skinny.lua`; its replay: data/recorded/gemm.skinny.db, an
-- H100 recording, and its comparison with cuBLAS in docs/benchmarks.md).
--
-- Decode GEMMs are a stream of B (2 N K bytes, 64..117 MB here) with a (M x K) re-read from L2. The
-- template keeps B's stream at copy speed with a deep TMA ring per block (one thread issues, STAGES
-- slices in flight) and feeds mma.sync from it; the space is the grid shape (BLOCK_N, SPLIT_K: a
-- cluster that sums its split-K partials through distributed shared memory), the slice width
-- (BLOCK_K), the ring depth (STAGES), the warp layout (WARPS_N x WARPS_K) and the tensor-core op
-- (MMA), sized for one exhaustive run in a device call of a few minutes
-- (tools/bench/device_gemm_decode.sh; the recorded gemm run spent ~55 ms per decode variant);
-- `gemm_space recipes/gemm/skinny.lua` prints the variants per problem.

-- ring, shared memory and grid rules shared with gemm.fp8_skinny; bf16 elements of 2 bytes
local ring = require "gemm.shared.skinny"
local ELEM = 2
local block_m, BM = ring.block_m, ring.BM

-- The template takes no tails: N and K must be multiples of the tile (requires).
local SMEM = ring.smem_expr(ELEM)
local REQUIRES = {
  "M <= 128",
  "N % BLOCK_N == 0",
  "K % BLOCK_K == 0 and K // BLOCK_K >= 2 * SPLIT_K",
  SMEM .. " <= 232448",
  BM .. " * (BLOCK_N // WARPS_N) // 32 <= 128",
  -- wgmma (MMA 2): N = BLOCK_M, one of those templates/common/wgmma_ops_swap.cuh has
  "MMA == 0 or " .. BM .. " == 16 or " .. BM .. " == 64 or " .. BM .. " == 96 or " .. BM .. " == 128",
}


local params = {
  { "BLOCK_N", { 64, 128, 256 } },   -- columns per block
  { "BLOCK_K", { 64, 128, 256 } },   -- k per ring slot
  { "STAGES",  ring.STAGES },        -- ring slots
  { "WARPS_N", { 2, 4, 8 } },        -- consumer warps along N ...
  { "WARPS_K", { 1, 2 } },           -- ... and along the k16 steps of a slot (4: more shared-memory
                                     -- atomics in the epilogue, no gain expected: left out)
  { "SPLIT_K", { 1, 2, 4, 8 } },      -- blocks of a cluster (1, SPLIT_K, 1), each a K / SPLIT_K range
  -- the tensor-core op: 0 mma.sync m16n8k16 from ldmatrix fragments; 2 wgmma with the operands
  -- swapped (c^T = b a^T: the weights' slot as A, a's rows as N), WARPS_N / 4 consumer warpgroups
  { "MMA", { 0, 2 } },
}

local constraints = {
  function(c) return c.WARPS_N * c.WARPS_K == 4 or c.WARPS_N * c.WARPS_K == 8 end,
  function(c) return (c.BLOCK_N // c.WARPS_N) % 16 == 0 end,
  function(c) return (c.BLOCK_K // 16) % c.WARPS_K == 0 end,
  -- clusters of 8 for wide blocks only (few tiles: N = 4096 has 16..32 of them)
  function(c) return c.SPLIT_K < 8 or c.BLOCK_N >= 128 end,
  -- wgmma: one or two consumer warpgroups side by side along N
  function(c) return c.MMA == 0 or ((c.WARPS_N == 4 or c.WARPS_N == 8) and c.WARPS_K == 1) end,
}

-- Which configs serve which problem, with the reason when not.
local function applies(c, p)
  local bm = block_m(p)
  local acc = bm * (c.BLOCK_N // c.WARPS_N) // 32  -- fp32 accumulators per consumer thread
  -- 128 accumulators spill (ptxas, sm_90a) under the register cap of two blocks per SM, and beside
  -- mma.sync's fragments under that of 9 warps (wgmma keeps its operands in shared memory)
  local pair = ring.smem_bytes(c, p, ELEM) <= ring.SMEM_PAIR
  if acc > 64 and (pair or (c.MMA == 0 and c.WARPS_N * c.WARPS_K > 4)) then
    return false, "128 accumulators under a register cap of two blocks per SM or 9 warps: spills"
  end
  local ok, why = ring.ring_and_grid(c, p, ELEM)
  if not ok then return false, why end
  -- warps: 4 consumers for M <= 16 (one m16 tile: little math per byte), 4 or 8 for M >= 64
  local warps = c.WARPS_N * c.WARPS_K
  if bm <= 16 and (warps ~= 4 or c.WARPS_K ~= 1) then return false, "M <= 16: 4 consumer warps along N" end
  if bm > 16 and warps == 4 and c.WARPS_K ~= 1 then return false, "M >= 64: 4 warps along N, or 8 warps" end
  if p.b_layout == "row" and c.BLOCK_N % 64 ~= 0 then return false, "row-major b: BLOCK_N a multiple of 64" end
  return true
end

local function problems_decode()
  local t = {}
  for _, m in ipairs({ 1, 16, 64, 128 }) do
    for _, nk in ipairs({ { 8192, 8192 }, { 14336, 4096 }, { 4096, 14336 } }) do
      for _, lay in ipairs({ "row", "col" }) do
        t[#t + 1] = { name = string.format("m%dn%dk%d_%s", m, nk[1], nk[2], lay), M = m, N = nk[1], K = nk[2], b_layout = lay }
      end
    end
  end
  return t
end

-- The same argument list as recipes/gemm.lua (so templates/gemm/reference.cuh with TMA_ARGS serves):
-- a, b, c, ws (one unused float), M, N, K, and the two tensor maps, 128-byte swizzled: a box of 64 k x
-- min(BLOCK_M, M) rows (rows past M stay zero in shared memory), b [N][K] 64 k x BLOCK_N rows, b [K][N]
-- 64 n x BLOCK_K rows.
local args = {
  { "a", tensor = "bf16", shape = { "M", "K" }, init = { "normal", 0, 1 }, adversarial = { "wide", -9, 1 } },
  { "b", tensor = "bf16", init = { "normal", 0, 1 }, adversarial = { "wide", -9, 1 },
    shape = { "b_layout == 'col' and N or K", "b_layout == 'col' and K or N" } },
  { "c", tensor = "bf16", shape = { "M", "N" }, output = true },
  { "ws", tensor = "f32", scratch = true, shape = { 1 } },
  { "M", scalar = "i32", value = "M" },
  { "N", scalar = "i32", value = "N" },
  { "K", scalar = "i32", value = "K" },
  { "tmA", tensormap = { tensor = "a", swizzle = 128,
    box = { 64, "min(" .. BM .. ", M)" } } },
  { "tmB", tensormap = { tensor = "b", swizzle = 128, box = { 64, "b_layout == 'col' and BLOCK_N or BLOCK_K" } } },
}

return {
  name = "gemm.skinny",
  template = "templates/gemm/skinny.cuh",
  kernel = "gemm_skinny",
  params = params,
  constraints = constraints,
  -- exact tiles only (the template takes no tails): the smallest tile's multiples, two slices at least
  domain = { "M >= 1 and M <= 128", "N >= 64 and N % 64 == 0", "K >= 128 and K % 64 == 0" },
  requires = REQUIRES,
  applies = applies,  -- pruning only
  fallback = { BLOCK_N = 64, BLOCK_K = 64, STAGES = 4, WARPS_N = 4, WARPS_K = 1, SPLIT_K = 1, MMA = 0 },
  defines = { B_COL = "b_layout == 'col' and 1 or 0", BLOCK_M = BM },
  problems = problems_decode(),
  launch = {
    grid = { "N // BLOCK_N", "SPLIT_K", 1 },
    block = { "32 * (WARPS_N * WARPS_K + 1)", 1, 1 },
    shared = SMEM,
    cluster = { 1, "SPLIT_K", 1 },
  },
  args = args,
  -- recipes/gemm.lua's reference, tolerance and metrics (see its comments for the tolerance)
  reference = {
    source = "templates/gemm/reference.cuh",
    kernel = "gemm_reference",
    grid = function(p) return { (p.N + 15) // 16, (p.M + 15) // 16, 1 } end,
    block = { 16, 16, 1 },
    shared = 0,
    defines = function(p) return { B_COL = p.b_layout == "col" and 1 or 0, TMA_ARGS = 1 } end,
  },
  tolerance = { rel_l2 = 1e-2, max_abs = 8, honest = 1.25 },
  metrics = {
    flops = function(p) return 2 * p.M * p.N * p.K end,
    bytes = function(p) return 2 * (p.M * p.K + p.K * p.N + p.M * p.N) end,
  },
}
