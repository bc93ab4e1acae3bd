-- gemm/shared/fp8.lua: the space of templates/gemm/fp8_mainloop_sm90.cuh that gemm.fp8 and gemm.fp8_fast
-- (one GEMM, recipes/gemm/fp8.lua) and moe.grouped_fp8 (one per expert, recipes/moe/grouped_fp8.lua)
-- share: the tile shapes, the parameters, the constraints of registers and shared memory, and the
-- scale tensors' draws.

local M = {}

M.SMEM_LIMIT = 227 * 1024

-- { BLOCK_M, BLOCK_N, CONSUMERS }: tiles of prefill sizes (two consumer warpgroups of 64 rows) and
-- of decode sizes (one warpgroup of 64 rows; small BLOCK_N spreads a 1 x N output over more SMs)
M.SHAPES_LARGE = { { 128, 128, 2 }, { 128, 160, 2 }, { 128, 192, 2 }, { 128, 256, 2 }, { 128, 128, 1 } }
M.SHAPES_DECODE = { { 64, 32, 1 }, { 64, 64, 1 }, { 64, 128, 1 }, { 64, 256, 1 } }

function M.in_list(list, m, n, c)
  for _, s in ipairs(list) do
    if s[1] == m and s[2] == n and s[3] == c then return true end
  end
  return false
end

-- the ring, its barriers, the row scales of each consumer warpgroup, alignment slack (fp8_mainloop_sm90.cuh)
M.SMEM = "1024 + STAGES * (BLOCK_M + BLOCK_N) * 128 + 16 * STAGES + CONSUMERS * (BLOCK_N + BLOCK_M // CONSUMERS) * 4"

function M.params(fast)
  return {
    { "BLOCK_M",    { 64, 128 } },
    { "BLOCK_N",    { 32, 64, 128, 160, 192, 256 } },
    { "CONSUMERS",  { 1, 2 } },                -- consumer warpgroups (BLOCK_M / CONSUMERS rows each)
    { "STAGES",     { 3, 4, 5, 6 } },          -- ring of 128-wide K blocks
    { "FAST_ACCUM", { fast and 1 or 0 } },     -- 1: one wgmma accumulator over K (gemm.fp8_fast)
    -- 2: the next K block's wgmma run while one block is promoted (a second part accumulator)
    { "PART_BUFFERS", fast and { 1 } or { 1, 2 }, absent = 1 }, -- configs recorded before it are PART_BUFFERS 1
    { "PERSISTENT", { 0, 1 } },                -- one wave of blocks walking the tiles
    { "RASTER",     { 1, 8 } },                -- tile order: row-major or groups of 8 tile rows
    { "RING_POS",   { 0, 1 }, absent = 0 },    -- ring slot from the K index or carried (the template's RingCursor)
  }
end

-- extra_smem: what a kernel keeps after the mainloop's shared memory (grouped: the tile table)
function M.constraints(extra_smem)
  return {
    function(c) return M.in_list(M.SHAPES_LARGE, c.BLOCK_M, c.BLOCK_N, c.CONSUMERS) or M.in_list(M.SHAPES_DECODE, c.BLOCK_M, c.BLOCK_N, c.CONSUMERS) end,
    -- accumulators: the fp32 promotion and PART_BUFFERS wgmma block sets, one set with FAST_ACCUM, at
    -- most 192 fp32 registers per thread of a consumer warpgroup (setmaxnreg gives it 232 or 240)
    "(FAST_ACCUM == 1 and 1 or 1 + PART_BUFFERS) * (BLOCK_M // CONSUMERS // 64) * BLOCK_N // 2 <= 192",
    M.SMEM .. " + " .. extra_smem .. " <= " .. M.SMEM_LIMIT,
    -- the ring: the deepest two that fit (at most 6), 4 .. 6 for the decode tiles
    function(c)
      if c.BLOCK_M == 64 then return c.STAGES >= 4 end
      local per = (c.BLOCK_M + c.BLOCK_N) * 128
      return c.STAGES >= math.min(6, (M.SMEM_LIMIT - 2048 - extra_smem) // per) - 1
    end,
    -- decode tiles: one or two tile rows, no persistence, no tile order
    function(c) return c.BLOCK_M == 128 or (c.PERSISTENT == 0 and c.RASTER == 1) end,
    function(c) return c.BLOCK_M == 64 or c.RASTER == 8 end,
  }
end

-- The scales' draws (see recipes/gemm/fp8.lua's tolerance): U(1/64, 4) in block mode (a spread of
-- 2^8 between blocks, so a block scaled with its neighbour's scale is visible), else U(0.5, 2); the
-- scales of b (w) again / sqrt(K), so that |c| has the same size in every mode and at every K.
M.SCALE_LO = "(scale == 'block' and 1 / 64 or 0.5)"
M.SCALE_HI = "(scale == 'block' and 4 or 2)"
M.SCALE_MODE = "scale == 'block' and 2 or scale == 'row' and 1 or 0"
M.SCALE_DOMAIN = "scale == 'tensor' or scale == 'row' or scale == 'block'"
M.KB = "((K + 127) // 128)"
M.NB = "((N + 127) // 128)"

return M
