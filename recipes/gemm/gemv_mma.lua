-- gemm/gemv_mma.lua: the decode-shape GEMM with b loaded straight into mma.sync fragments
-- (templates/gemm/gemv_mma.cuh), for b [N][K] (nn.Linear) and M <= 64. Same problems (the col ones),
-- names, arguments (no tensor maps), reference and tolerance as recipes/gemm/skinny.lua, so results
-- compare per problem; a family of its own in bundles (tunert.torch.linear asks it beside gemm.skinny).
--
-- Why a third decode kernel: the CUDA-core GEMV of recipes/gemm.lua (16-byte loads per lane) streams
-- b faster than the TMA rings of gemm.skinny and of cuBLAS at M = 1, but its FMAs cannot serve M = 16
-- and more; this keeps its loads and does the math on tensor cores (the k permutation in the
-- template's header), with a staged in shared memory per block. The space: columns per warp
-- (N_TILES n8 tiles), chunks in flight (UNROLL), the warp layout (WARPS_N along N, WARPS_K along k)
-- and the split-K cluster, which also sets how much of a a block stages.

local BLOCK_N = "(8 * N_TILES * WARPS_N)"
-- dynamic shared memory: a's M rows over K / SPLIT_K (rows padded by 64 bytes), then the fp32
-- reduction tile of 8 or 16 * ceil(M / 16) rows of BLOCK_N + 4 (templates/gemm/gemv_mma.cuh)
local SMEM = "M * (2 * (K // SPLIT_K) + 64) + (M <= 8 and 8 or 16 * ((M + 15) // 16)) * (" .. BLOCK_N .. " + 4) * 4"
local SMEM_LIMIT = 227 * 1024

local params = {
  { "N_TILES", { 1, 2, 4 } },       -- n8 tiles (8 columns each) per warp
  { "UNROLL",  { 2, 4, 8 } },       -- 32-k chunks of b in flight per n8 tile
  { "WARPS_N", { 1, 2, 4, 8 } },    -- warps side by side along N (they share a's loads in L1) ...
  { "WARPS_K", { 1, 2, 4 } },       -- ... and along the block's k range
  { "SPLIT_K", { 1, 2, 4, 8 } },    -- blocks of a cluster (1, SPLIT_K, 1), each a K / SPLIT_K range
}

local constraints = {
  -- blocks of 4 or 8 warps
  function(c) return c.WARPS_N * c.WARPS_K == 4 or c.WARPS_N * c.WARPS_K == 8 end,
}

-- Which configs serve which problem, with the reason when not.
local function applies(c, p)
  local mt = (p.M + 15) // 16
  -- accumulators and the b chunks in flight, 4 registers each, under about 160 per thread
  if 4 * mt * c.N_TILES + 4 * c.UNROLL * c.N_TILES > 160 then
    return false, "accumulators and b chunks in flight over 160 registers"
  end
  local blocks = p.N // (8 * c.N_TILES * c.WARPS_N) * c.SPLIT_K
  local warps = blocks * c.WARPS_N * c.WARPS_K
  if warps < 132 * 16 then return false, "fewer than 16 warps per SM of 132" end
  if blocks > 132 * 16 then return false, "more than 16 blocks per SM" end
  -- each warp's k range at least 4 batches of chunks (the loads of one batch are not overlapped
  -- with another's math within a warp: many warps hide it, few batches do not)
  if p.K // (c.SPLIT_K * c.WARPS_K) < 4 * 32 * c.UNROLL then return false, "fewer than 4 batches per warp" end
  return true
end

local function problems()
  local t = {}
  for _, m in ipairs({ 1, 16, 64 }) do
    for _, nk in ipairs({ { 8192, 8192 }, { 14336, 4096 }, { 4096, 14336 } }) do
      -- a of 64 rows at K 14336 does not fit shared memory at any split (the domain)
      if m * (nk[2] // 4 + 64) + 64 * 260 * 4 <= SMEM_LIMIT then
        t[#t + 1] = { name = string.format("m%dn%dk%d_col", m, nk[1], nk[2]), M = m, N = nk[1], K = nk[2], b_layout = "col" }
      end
    end
  end
  return t
end

return {
  name = "gemm.gemv_mma",
  template = "templates/gemm/gemv_mma.cuh",
  kernel = "gemm_gemv_mma",
  params = params,
  constraints = constraints,
  -- the fallback (8 blocks per cluster, 32 columns each) must serve every problem of the domain
  domain = { "M >= 1 and M <= 64", "b_layout == 'col'", "N >= 32 and N % 32 == 0", "K >= 512 and K % 512 == 0",
             "M * (K // 4 + 64) + 64 * 260 * 4 <= " .. SMEM_LIMIT },
  requires = {
    "M <= 64",
    "N % " .. BLOCK_N .. " == 0",
    "K % (32 * UNROLL * WARPS_K * SPLIT_K) == 0",
    SMEM .. " <= " .. SMEM_LIMIT,
  },
  applies = applies,  -- pruning only
  fallback = { N_TILES = 1, UNROLL = 2, WARPS_N = 4, WARPS_K = 1, SPLIT_K = 8 },
  defines = { ROW_TILES = "(M + 15) // 16", ROWS_8 = "M <= 8 and 1 or 0" },
  problems = problems(),
  launch = {
    grid = { "N // " .. BLOCK_N, "SPLIT_K", 1 },
    block = { "32 * WARPS_N * WARPS_K", 1, 1 },
    shared = SMEM,
    cluster = { 1, "SPLIT_K", 1 },
  },
  args = {
    { "a", tensor = "bf16", shape = { "M", "K" }, init = { "normal", 0, 1 }, adversarial = { "wide", -9, 1 } },
    { "b", tensor = "bf16", shape = { "N", "K" }, init = { "normal", 0, 1 }, adversarial = { "wide", -9, 1 } },
    { "c", tensor = "bf16", shape = { "M", "N" }, output = true },
    { "ws", tensor = "f32", scratch = true, shape = { 1 } },
    { "M", scalar = "i32", value = "M" },
    { "N", scalar = "i32", value = "N" },
    { "K", scalar = "i32", value = "K" },
  },
  -- recipes/gemm.lua's reference, tolerance and metrics (see its comments for the tolerance)
  reference = {
    source = "templates/gemm/reference.cuh",
    kernel = "gemm_reference",
    grid = function(p) return { (p.N + 15) // 16, (p.M + 15) // 16, 1 } end,
    block = { 16, 16, 1 },
    shared = 0,
    defines = function(p) return { B_COL = 1 } end,
  },
  tolerance = { rel_l2 = 1e-2, max_abs = 8, honest = 1.25 },
  metrics = {
    flops = function(p) return 2 * p.M * p.N * p.K end,
    bytes = function(p) return 2 * (p.M * p.K + p.K * p.N + p.M * p.N) end,
  },
}
