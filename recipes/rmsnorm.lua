-- rmsnorm.lua: RMSNorm with weight, bf16, eps 1e-6, templates/rmsnorm/rmsnorm.cuh.
-- Two recipes, the same template and parameters; `residual` is a problem dim (RESIDUAL define):
--   "rmsnorm"      y = x * rsqrt(mean(x^2) + eps) * w
--   "rmsnorm.add"  h = x + r (written back: the residual stream), y = rmsnorm(h) * w
-- (two recipes because the argument lists differ). Memory-bound: the figure of merit is GB/s of
-- the tensors read and written once, against the copy recipe's bandwidth on the same device. The hidden size
-- H is a kernel argument; a variant that keeps its slice in registers (CACHE_ROW 1) is compiled for a
-- capacity of ITERS vectors per thread (its `defines`, an expression of H), so it serves every H of the
-- same ITERS; the re-reading forms (CACHE_ROW 0) serve any H. Shape rules and geometry are
-- expressions (runtime/tunert_expr.h) that libtunert evaluates for problems that were not tuned.

local EPS = 1e-6

local function threads_per_row(c) return c.ROW_MODE == 0 and 32 or c.BLOCK end
local function cdiv(a, b) return string.format("((%s + %s - 1) // %s)", a, b, b) end
-- vectors per thread of a row (the last ones masked)
local ITERS = cdiv(cdiv("H", "(VEC_BYTES // 2)"), "(ROW_MODE == 0 and 32 or BLOCK)")

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
      -- second set: x, r of std 300: sums of squares ~1e9 per row, past fp16's 65504 (an fp16 accumulation overflows)
      { "x",   tensor = "bf16", shape = { "T", "H" }, init = { "normal", 0, 1 }, adversarial = { "normal", 0, 300 } },
      { "r",   tensor = "bf16", shape = { "T", "H" }, init = { "normal", 0, 1 }, adversarial = { "normal", 0, 300 } },
      { "w",   tensor = "bf16", shape = { "H" }, init = { "uniform", 0.5, 1.5 } },
      { "y",   tensor = "bf16", shape = { "T", "H" }, output = true },
      { "h",   tensor = "bf16", shape = { "T", "H" }, output = true },
      { "T",   scalar = "i32", value = "T" },
      { "H",   scalar = "i32", value = "H" },
      { "eps", scalar = "f32", value = EPS },
    }
  else
    args = {
      -- second set: x of std 300: sums of squares ~4e8 per row, past fp16's 65504 (an fp16 accumulation overflows)
      { "x",   tensor = "bf16", shape = { "T", "H" }, init = { "normal", 0, 1 }, adversarial = { "normal", 0, 300 } },
      { "w",   tensor = "bf16", shape = { "H" }, init = { "uniform", 0.5, 1.5 } },
      { "y",   tensor = "bf16", shape = { "T", "H" }, output = true },
      { "T",   scalar = "i32", value = "T" },
      { "H",   scalar = "i32", value = "H" },
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

    -- a cached slice of at most 512 B per thread (rmsnorm.cuh's static_assert)
    requires = { "CACHE_ROW == 0 or " .. ITERS .. " * VEC_BYTES <= 512" },

    -- search-space pruning for the tuned problems: cached slices that fit the register cap
    applies = function(c, p)
      local ve = c.VEC_BYTES // 2
      local tpr = threads_per_row(c)
      local it = ((p.H + ve - 1) // ve + tpr - 1) // tpr
      if not cache_fits(c, it) then
        return false, string.format("cached slice of %d B per thread does not fit the register cap", it * c.VEC_BYTES)
      end
      return true
    end,

    defines = { ITERS = "CACHE_ROW == 1 and " .. ITERS .. " or 0", RESIDUAL = "residual" },

    problems = {
      { name = "t16384h4096" .. tag, T = 16384, H = 4096, residual = residual },  -- Llama 3 8B, 16k tokens
      { name = "t4096h8192" .. tag,  T = 4096,  H = 8192, residual = residual },  -- Llama 3 70B, 4k tokens
      -- hidden sizes that are no power of two: every variant's tails verified against the reference
      { name = "t1024h4000" .. tag,  T = 1024,  H = 4000, residual = residual },
      { name = "t1024h5120" .. tag,  T = 1024,  H = 5120, residual = residual },  -- e.g. Llama 2 13B
      { name = "t1024h8200" .. tag,  T = 1024,  H = 8200, residual = residual },
      { name = "t1000h2049" .. tag,  T = 1000,  H = 2049, residual = residual },  -- odd: the scalar path
    },

    -- the re-reading forms serve any H; 1 Mi keeps in-row offsets 32-bit
    domain = { "T >= 1", "H >= 1", "H <= 1048576" },
    -- a block per row, re-reading the row for the output: any hidden size
    fallback = { ROW_MODE = 1, BLOCK = 256, VEC_BYTES = 16, CACHE_ROW = 0, CACHE_HINT = 1, MIN_BLOCKS = 1 },

    launch = {
      grid = { "ROW_MODE == 0 and (T + BLOCK // 32 - 1) // (BLOCK // 32) or T", 1, 1 },
      block = { "BLOCK", 1, 1 },
      shared = 0,
    },

    args = args,

    reference = {
      source = "templates/rmsnorm/reference.cuh",
      kernel = "rmsnorm_reference",
      grid = { "T", 1, 1 },
      block = { 256, 1, 1 },
      defines = function(p) return { RESIDUAL = p.residual } end,
    },

    -- Both sides are fp32 math rounded once to bf16 (rsqrtf and the summation order differ by
    -- ~1e-7 relative): they differ by one bf16 ulp where the fp32 values straddle a rounding
    -- boundary. |y| reaches ~8 (|x| ~5 over rms 1, w 1.5; with the residual |h| ~7 over rms 1.4),
    -- where one ulp is 2^-4 = 0.0625. h is computed identically on both sides: exact. honest: a
    -- bf16 sum of squares or bf16 normalized values would cost more than one rounding of the output.
    tolerance = { rel_l2 = 1e-2, max_abs = 0.1, honest = 1.25 },

    metrics = {
      -- x (and r) read, y (and h) written, w read once; bf16
      bytes = function(p) return 2 * ((residual and 4 or 2) * p.T * p.H + p.H) end,
      flops = 0,
    },
  }
end

return { recipe(false), recipe(true) }
