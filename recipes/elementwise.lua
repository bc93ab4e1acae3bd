-- elementwise.lua: fused y = silu(x * scale + bias), templates/elementwise/elementwise.cuh.
-- x, y [rows, cols] bf16; scale, bias [cols] bf16 (per-channel, as an MLP epilogue); fp32 math.
-- Memory-bound: the figure of merit is GB/s of x read + y written, against the copy recipe's
-- bandwidth on the same device. Every knob of the template is a parameter here.

-- Threads resident per SM on sm_90 (the grid of a persistent variant fills them once).
local THREADS_PER_SM = 2048
-- Blocks of one tile each: elements over the elements of a block-step (BLOCK * ILP vectors).
local TILES = "((rows * cols + BLOCK * ILP * (VEC_BYTES // 2) - 1) // (BLOCK * ILP * (VEC_BYTES // 2)))"

return {
  name = "elementwise",
  template = "templates/elementwise/elementwise.cuh",
  kernel = "silu_scale_bias",

  params = {
    { "VEC_BYTES",   { 4, 8, 16 } },          -- bytes per x load / y store (2, 4, 8 bf16)
    { "ILP",         { 1, 2, 4, 8 } },        -- x vectors in flight per thread
    { "BLOCK",       { 128, 256, 512, 1024 } },
    { "MIN_BLOCKS",  { 1, 2 } },              -- __launch_bounds__ minimum blocks per SM
    { "GRID_STRIDE", { false, true } },       -- persistent grid-stride loop vs one tile per block
    { "CACHE_HINT",  { false, true } },       -- ld.global.nc / st.global.cs on x / y
  },

  constraints = {
    -- 16..64 bytes of x in flight per thread: less starves the memory system (the copy recipe's
    -- best variants hold 32-64), more only costs registers. VEC 8 B x ILP 8 is left out: the same
    -- 64 B as 16 B x 4 in twice the instructions.
    function(c)
      local b = c.VEC_BYTES * c.ILP
      return b >= 16 and b <= 64 and not (c.VEC_BYTES == 8 and c.ILP == 8)
    end,
    -- 64 B per thread in 1024-thread blocks (capped at 64 registers) spills: the compiler hoists
    -- the scale and bias loads of all ILP vectors next to x (~110 registers unbounded).
    "BLOCK * VEC_BYTES * ILP <= 32768",
    -- MIN_BLOCKS = 2 only binds for 1024-thread blocks (it caps registers at 32: two resident
    -- blocks, full occupancy); at 32 registers only 16 B per thread fits without spilling.
    -- Elsewhere this kernel's 27-77 registers leave it without effect.
    "MIN_BLOCKS == 1 or (BLOCK == 1024 and VEC_BYTES * ILP <= 16)",
  },

  -- What a config needs (elementwise.cuh): whole vectors per row, vector indices below 2^31.
  requires = { "cols % (VEC_BYTES // 2) == 0", "rows * cols // (VEC_BYTES // 2) < 2147483648" },

  -- Any row count; an even row length (the narrowest vector is 2 bf16).
  domain = { "rows >= 1", "cols >= 2 and cols % 2 == 0", "rows * cols // 2 < 2147483648" },
  -- The generic variant: 4-byte vectors (any even row length), one tile per block.
  fallback = { VEC_BYTES = 4, ILP = 4, BLOCK = 256, MIN_BLOCKS = 1, GRID_STRIDE = false, CACHE_HINT = true },

  -- 16384 x 14336 (470 MB per tensor) is left out to keep a run short: every variant's output is
  -- copied back and compared on the host, ~1 s per variant at that size. These two are 4x-5x L2.
  problems = {
    { name = "r16384c4096",  rows = 16384, cols = 4096 },    -- hidden 4096 (Llama 3 8B), 16k tokens
    { name = "r4096c14336",  rows = 4096,  cols = 14336 },   -- MLP intermediate 14336, 4k tokens
  },

  -- expressions, so bundled variants serve untuned row counts (docs/runtime.md)
  launch = {
    grid = { "GRID_STRIDE and min(" .. TILES .. ", sm_count * (" .. THREADS_PER_SM .. " // BLOCK)) or " .. TILES, 1, 1 },
    block = { "BLOCK", 1, 1 },
    shared = 0,
  },

  args = {
    { "x",     tensor = "bf16", shape = { "rows", "cols" }, init = { "normal", 0, 1 } },
    { "scale", tensor = "bf16", shape = { "cols" }, init = { "uniform", 0.5, 1.5 } },
    { "bias",  tensor = "bf16", shape = { "cols" }, init = { "uniform", -1, 1 } },
    { "y",     tensor = "bf16", shape = { "rows", "cols" }, output = true },
    { "rows",  scalar = "i32", value = "rows" },
    { "cols",  scalar = "i32", value = "cols" },
  },

  reference = {
    source = "templates/elementwise/reference.cuh",
    kernel = "silu_scale_bias_reference",
    grid = function(p) return { (p.rows * p.cols + 255) // 256, 1, 1 } end,
    block = { 256, 1, 1 },
  },

  -- Both sides are fp32 math rounded once to bf16 (the variant's __expf / __fdividef differ from
  -- expf and division by ~1e-6 relative): they differ only where the fp32 values straddle a bf16
  -- rounding boundary, by one bf16 ulp (2^-8 relative). |y| reaches ~8 (|x| ~5, scale 1.5, bias 1),
  -- where one ulp is 2^-4 = 0.0625.
  tolerance = { rel_l2 = 1e-2, max_abs = 0.1 },

  metrics = {
    -- x read, y written, scale and bias read once (bf16)
    bytes = function(p) return 2 * (2 * p.rows * p.cols + 2 * p.cols) end,
    flops = 0,
  },
}
