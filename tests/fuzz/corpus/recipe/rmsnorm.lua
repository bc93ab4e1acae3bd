-- rmsnorm.lua: RMSNorm with weight, bf16, eps 1e-6, templates/rmsnorm/rmsnorm.cuh.
-- Two recipes, the same template and parameters; `residual` is a problem dim (RESIDUAL define):
--   "rmsnorm"      y = x * rsqrt(mean(x^2) + eps) * w
--   "rmsnorm.add"  h = x + r (written back: the residual stream), y = rmsnorm(h) * w
-- (two recipes because the argument lists differ). Memory-bound: the figure of merit is GB/s of
-- the tensors read and written once, against the copy recipe's bandwidth on the same device. The hidden size
-- is a compile-time constant (HIDDEN), so a thread's slice of a row can stay in registers.

local EPS = 1e-6

local function threads_per_row(c) return c.ROW_MODE == 0 and 32 or c.BLOCK end

-- Same register model as recipes/softmax.lua: a cached slice is raw bf16 vectors, possibly kept
-- unpacked to fp32 (twice), plus ~24 registers of addresses and state, under the launch-bounds cap.
local function cache_fits(c, it)
  if c.CACHE_ROW == 0 then return true end
  local cap = math.min(255, 65536 // (c.BLOCK * c.MIN_BLOCKS))
  return 2 * it * c.VEC_BYTES // 4 + 24 <= cap
end

local function recipe(residual)
  local args
  if residual then
    args = {
      { "x",   tensor = "bf16", shape = { "T", "H" }, init = { "normal", 0, 1 } },
      { "r",   tensor = "bf16", shape = { "T", "H" }, init = { "normal", 0, 1 } },
      { "w",   tensor = "bf16", shape = { "H" }, init = { "uniform", 0.5, 1.5 } },
      { "y",   tensor = "bf16", shape = { "T", "H" }, output = true },
      { "h",   tensor = "bf16", shape = { "T", "H" }, output = true },
      { "T",   scalar = "i32", value = "T" },
      { "eps", scalar = "f32", value = EPS },
    }
  else
    args = {
      { "x",   tensor = "bf16", shape = { "T", "H" }, init = { "normal", 0, 1 } },
      { "w",   tensor = "bf16", shape = { "H" }, init = { "uniform", 0.5, 1.5 } },
      { "y",   tensor = "bf16", shape = { "T", "H" }, output = true },
      { "T",   scalar = "i32", value = "T" },
      { "eps", scalar = "f32", value = EPS },
    }
  end
  local tag = residual and "add" or ""
  return {
    name = residual and "rmsnorm.add" or "rmsnorm",
    template = "templates/rmsnorm/rmsnorm.cuh",
    kernel = "rmsnorm_kernel",

    params = {
      { "ROW_MODE",   { 0, 1 } },                 -- 0: a row per warp, 1: a row per block
      { "BLOCK",      { 128, 256, 512, 1024 } },  -- threads per block (warp mode: BLOCK / 32 rows)
      { "VEC_BYTES",  { 4, 8, 16 } },             -- bytes per load / store (2, 4, 8 bf16)
      { "CACHE_ROW",  { 1, 0 } },                 -- 1: the row slice stays in registers
      { "CACHE_HINT", { 0, 1 } },                 -- ld.global.nc / st.global.cs on the row tensors
      { "MIN_BLOCKS", { 1, 2 } },                 -- __launch_bounds__ minimum blocks per SM
    },

    constraints = {
      -- warp mode: 1024-thread blocks (32 rows each) add nothing over 512
      "ROW_MODE == 1 or BLOCK <= 512",
      -- MIN_BLOCKS only matters where registers are many (cached slices), at 256 or 512 threads
      "MIN_BLOCKS == 1 or (CACHE_ROW == 1 and (BLOCK == 256 or BLOCK == 512))",
    },

    applies = function(c, p)
      local ve = c.VEC_BYTES // 2
      local tpr = threads_per_row(c)
      local vecs = p.H // ve
      if p.H % ve ~= 0 or vecs % tpr ~= 0 then
        return false, string.format("%d vectors per row for %d threads: not a whole number each", vecs, tpr)
      end
      local it = vecs // tpr
      if not cache_fits(c, it) then
        return false, string.format("cached slice of %d B per thread does not fit the register cap", it * c.VEC_BYTES)
      end
      return true
    end,

    defines = function(c, p) return { HIDDEN = p.H, RESIDUAL = p.residual } end,

    problems = {
      { name = "t16384h4096" .. tag, T = 16384, H = 4096, residual = residual },  -- Llama 3 8B, 16k tokens
      { name = "t4096h8192" .. tag,  T = 4096,  H = 8192, residual = residual },  -- Llama 3 70B, 4k tokens
    },

    launch = {
      grid = function(c, p)
        if c.ROW_MODE == 0 then
          local rows_per_block = c.BLOCK // 32
          return { (p.T + rows_per_block - 1) // rows_per_block, 1, 1 }
        end
        return { p.T, 1, 1 }
      end,
      block = function(c) return { c.BLOCK, 1, 1 } end,
      shared = 0,
    },

    args = args,

    reference = {
      source = "templates/rmsnorm/reference.cuh",
      kernel = "rmsnorm_reference",
      grid = function(p) return { p.T, 1, 1 } end,
      block = { 256, 1, 1 },
      defines = function(p) return { HIDDEN = p.H, RESIDUAL = p.residual } end,
    },

    -- Both sides are fp32 math rounded once to bf16 (rsqrtf and the summation order differ by
    -- ~1e-7 relative): they differ by one bf16 ulp where the fp32 values straddle a rounding
    -- boundary. |y| reaches ~8 (|x| ~5 over rms 1, w 1.5; with the residual |h| ~7 over rms 1.4),
    -- where one ulp is 2^-4 = 0.0625. h is computed identically on both sides: exact.
    tolerance = { rel_l2 = 1e-2, max_abs = 0.1 },

    metrics = {
      -- x (and r) read, y (and h) written, w read once; bf16
      bytes = function(p) return 2 * ((residual and 4 or 2) * p.T * p.H + p.H) end,
      flops = 0,
    },
  }
end

return { recipe(false), recipe(true) }
