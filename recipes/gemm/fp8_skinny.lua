-- gemm/fp8_skinny.lua: the decode-shape FP8 e4m3 GEMM (M <= 16), templates/gemm/skinny.cuh with FP8 1.
-- Same problems (the decode ones at M 1 and 16), names, arguments, reference and tolerance as recipes/gemm/fp8.lua's
-- gemm.fp8, so results and comparisons line up per problem; a recipe file of its own so that fp8.lua's
-- recordings keep their source hash, and a family of its own in bundles (tunert.torch.scaled_mm asks
-- both and runs the faster).
--
-- Why a second kernel: at M <= 64 the GEMM is a stream of b (N K bytes), and gemm.fp8's wgmma tiles
-- (64 rows of a, one warpgroup per 64 x BLOCK_N tile) keep too few bytes in flight per SM to stream it
-- at copy speed. skinny.cuh's deep TMA ring per block with mma.sync m16n8k32 consumers (one m16 tile
-- for M <= 16) and split-K over a cluster is gemm.skinny's design; here it reads half the bytes per k.
-- Precision as gemm.fp8 (fp8.lua's tolerance comment): the tensor core's sums are promoted to fp32
-- every 128 of K, block scales applied there, tensor and row scales at the store.
-- M <= 16 only: with 64 rows the partial sums double the accumulators of 4 m16 tiles and ptxas spills
-- on every tile shape of the space (compile-only, sm_90a); gemm.fp8 serves M > 16.

-- ring, shared memory and grid rules shared with gemm.skinny; e4m3 elements of 1 byte
local ring = require "gemm.shared.skinny"
local ELEM = 1
local BM = ring.BM
local SMEM = ring.smem_expr(ELEM)
local REQUIRES = {
  "M <= 16",
  "N % BLOCK_N == 0",
  "K % BLOCK_K == 0 and K // BLOCK_K >= 2 * SPLIT_K",
  SMEM .. " <= 232448",
  -- fp32 accumulators and the partial sums of one box per consumer thread
  BM .. " * (BLOCK_N // WARPS_N) // 32 * 2 <= 128",
}


local params = {
  { "BLOCK_N", { 64, 128, 256 } },   -- columns per block
  { "BLOCK_K", { 128, 256, 512 } },  -- k (e4m3, bytes) per ring slot: one to four 128-byte boxes
  { "STAGES",  ring.STAGES },        -- ring slots
  -- one m16 tile of rows: 4 consumer warps along N, as gemm/skinny.lua prunes its space for M <= 16;
  -- wgmma also with 8 (two warpgroups, each half the block's columns: twice the wgmma batches in flight)
  { "WARPS_N", { 4, 8 } },
  { "WARPS_K", { 1 } },
  -- blocks of a cluster (1, SPLIT_K, 1), each a K / SPLIT_K range; 3 and 6 as well as powers of two,
  -- so that N / BLOCK_N * SPLIT_K blocks can spread over 132 SMs more evenly (144 tiles of N 18432
  -- leave 12 SMs with two blocks); in the H200 recording 3 or 6 is the best on a few problems only,
  -- by little, and it did not close the per-tensor gap at N 18432
  { "SPLIT_K", { 1, 2, 3, 4, 6, 8 } },
  -- the tensor-core op (skinny.cuh's MMA): 0 the e4m3 mma.sync, which sm_90a lowers to fp16 unpacks
  -- and fp16 mmas; 1 the same spelled out, summing straight into fp32 for tensor and row scales;
  -- 2 wgmma with the operands swapped (the weights as A, read by the fp8 tensor cores unpacked)
  { "MMA", { 0, 1, 2 } },
}

local constraints = {
  -- clusters of 8 for wide blocks only
  function(c) return c.SPLIT_K < 8 or c.BLOCK_N >= 128 end,
  -- mma.sync: 4 warps; wgmma: one or two warpgroups side by side along N
  function(c) return c.WARPS_N == 4 or c.MMA == 2 end,
  function(c) return (c.BLOCK_N // c.WARPS_N) % 16 == 0 end,
}

-- gemm.skinny's pruning of ring depth and grid size
local function applies(c, p) return ring.ring_and_grid(c, p, ELEM) end

-- gemm.fp8's decode problems (recipes/gemm/fp8.lua: Llama-3-8B and DeepSeek-V3 projections)
local DECODE_NK = { { 14336, 4096 }, { 4096, 14336 }, { 18432, 7168 }, { 7168, 18432 } }
local function problems()
  local t = {}
  for _, m in ipairs({ 1, 16 }) do
    for _, nk in ipairs(DECODE_NK) do
      for _, s in ipairs({ "tensor", "row", "block" }) do
        t[#t + 1] = { name = string.format("m%dn%dk%d_%s", m, nk[1], nk[2], s), M = m, N = nk[1], K = nk[2], scale = s }
      end
    end
  end
  return t
end

local KB = "((K + 127) // 128)"
local NB = "((N + 127) // 128)"
local SCALE_A_NUMEL = "(scale == 'block' and M * " .. KB .. " or scale == 'row' and M or 1)"
local SCALE_B_NUMEL = "(scale == 'block' and " .. NB .. " * " .. KB .. " or scale == 'row' and N or 1)"
local SCALE_LO = "(scale == 'block' and 1 / 64 or 0.5)"
local SCALE_HI = "(scale == 'block' and 4 or 2)"

-- recipes/gemm/fp8.lua's arguments; a's box is one 128-byte row of k by the rows of one m16 tile
-- stack (rows past M stay zero in shared memory), b's one 128-byte row of k by BLOCK_N rows
local args = {
  { "a", tensor = "e4m3", shape = { "M", "K" }, init = { "normal", 0, 1 } },
  { "b", tensor = "e4m3", shape = { "N", "K" }, init = { "normal", 0, 1 } },
  { "c", tensor = "bf16", shape = { "M", "N" }, output = true },
  { "scale_a", tensor = "f32", shape = { SCALE_A_NUMEL }, init = { "uniform", SCALE_LO, SCALE_HI } },
  { "scale_b", tensor = "f32", shape = { SCALE_B_NUMEL },
    init = { "uniform", SCALE_LO .. " / sqrt(K)", SCALE_HI .. " / sqrt(K)" } },
  { "M", scalar = "i32", value = "M" },
  { "N", scalar = "i32", value = "N" },
  { "K", scalar = "i32", value = "K" },
  { "tmA", tensormap = { tensor = "a", swizzle = 128, box = { 128, "min(" .. BM .. ", M)" } } },
  { "tmB", tensormap = { tensor = "b", swizzle = 128, box = { 128, "BLOCK_N" } } },
}

return {
  name = "gemm.fp8_skinny",
  template = "templates/gemm/skinny.cuh",
  kernel = "gemm_skinny",
  params = params,
  constraints = constraints,
  -- exact tiles only: the smallest tile's multiples, two slices at least
  domain = { "M >= 1 and M <= 16", "N >= 64 and N % 64 == 0", "K >= 256 and K % 128 == 0",
             "scale == 'tensor' or scale == 'row' or scale == 'block'" },
  requires = REQUIRES,
  applies = applies,  -- pruning only
  fallback = { BLOCK_N = 64, BLOCK_K = 128, STAGES = 4, WARPS_N = 4, WARPS_K = 1, SPLIT_K = 1, MMA = 0 },
  defines = { FP8 = 1, B_COL = 1, BLOCK_M = BM, SCALE_MODE = "scale == 'block' and 2 or scale == 'row' and 1 or 0" },
  problems = problems(),
  launch = {
    grid = { "N // BLOCK_N", "SPLIT_K", 1 },
    block = { "32 * (WARPS_N * WARPS_K + 1)", 1, 1 },
    shared = SMEM,
    cluster = { 1, "SPLIT_K", 1 },
  },
  args = args,
  reference = {
    source = "templates/gemm/reference_fp8.cuh",
    kernel = "gemm_fp8_reference",
    grid = { "(N + 15) // 16", "(M + 15) // 16", 1 },
    block = { 16, 16, 1 },
    shared = 0,
    defines = function(p) return { SCALE_MODE = p.scale == "block" and 2 or p.scale == "row" and 1 or 0 } end,
  },
  tolerance = { rel_l2 = 5e-3, max_abs = 0.5 },
  metrics = {
    flops = "2 * M * N * K",
    bytes = "M * K + N * K + 2 * M * N + 4 * (" .. SCALE_A_NUMEL .. " + " .. SCALE_B_NUMEL .. ")",
  },
}
