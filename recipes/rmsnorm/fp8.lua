-- rmsnorm/fp8.lua: residual add + RMSNorm + fp8 e4m3 quantization in one pass,
-- templates/rmsnorm/rmsnorm_fp8.cuh: what an FP8 serving engine runs before every FP8 linear layer
-- (vLLM's fused_add_rms_norm followed by static or dynamic per-token fp8 quantization, fused):
--   h = bf16(x + r)                       the updated residual stream (written to h; the kernel
--                                         also allows h = r, the in-place update vLLM does, but
--                                         the tuner checksums inputs, so the out-of-place form is
--                                         what is verified and timed)
--   v = h * w * rsqrt(mean(h^2) + eps)
--   y = e4m3(v / scale), nearest even, saturated to +-448
-- Two recipes, one template (define QUANT), because the scale's direction differs:
--   rmsnorm.fp8         dynamic per token: scale [T] f32 written, max(amax(|v| of the row) / 448,
--                       1 / (448 * 512)) (vLLM's floor: a zero row stays finite)
--   rmsnorm.fp8_static  static per tensor: scale [1] f32 read (a calibrated scale; values past
--                       448 * scale saturate)
-- The mode is also the problem dim `quant` ('dynamic' | 'static'), so each recipe's domain names it
-- and a bundle's selection keys on it. x, r, h [T, H] bf16, w [H] bf16, y [T, H] e4m3. y and its
-- scale feed an FP8 GEMM directly (gemm.fp8 scale 'row' takes the per-token scale as scale_a).
-- Memory-bound: 7 bytes per element (x, r read; h bf16 and y e4m3 written). Tunables, thread map,
-- register model and tails are those of recipes/rmsnorm.lua (same stages: templates/rmsnorm/row.cuh),
-- and, static mode only, W_AHEAD: the slice's weights loaded with x and r rather than after the
-- row's reduction (the dynamic mode always loads them there), which costs registers and shortens
-- the chain of dependent loads that bounds a row's time when there are few rows.
-- Every field libtunert evaluates is an expression: bundled variants serve untuned T and H.
--
-- Inputs. Per-token scales matter where a row's range is wide: a few channels much larger than
-- the rest set its amax and the bulk is quantized far below 448. The tuner draws every element of a
-- tensor from one distribution, so the outlier channels come from the weight: w ~ N(0, 1) (signed,
-- about 1 channel in 1000 over 3.3 times the typical gain, some near 0), and |h w| has exponential
-- tails, so a row's amax is ~10 times its rms (a normal row: ~4). r ~ N(0, 2) (the residual stream
-- larger than the layer output added to it), x ~ N(0, 1): no zeros. y then spans e4m3 from its
-- subnormals to 448 on every row. The static scale, U(6, 10) / 448, is below most rows' amax, so the
-- rows' largest elements saturate (the clamp is exercised) while the bulk stays in range.
--
-- Tolerance. The reference (templates/rmsnorm/reference_fp8.cuh) computes h exactly as the kernel
-- (fp32 add, one bf16 rounding: h agrees bit for bit), v in fp64, the dynamic scale from the fp64
-- amax rounded to f32, y = e4m3(v / scale) from fp64. A variant's fp32 v / scale differs from it
-- by a relative delta of ~1e-6 (the fp32 sum of H squares, rsqrtf, two roundings of the factors;
-- bounded by ~(H / threads per row + log2(threads)) * 2^-24 <= 3e-5 at H 14336 in warp mode). y then
-- differs only where the exact value lies within delta of a rounding midpoint, by one e4m3 step: the
-- step is 2^-3 .. 2^-4 of |y| (3 mantissa bits), so a fraction ~2 delta / 2^-4 <= 1e-3 of the
-- elements moves by <= 2^-3 of its value: rel_l2 <= sqrt(1e-3) * 2^-3 = 4e-3 in the worst case,
-- ~1e-4 typically. The largest step is 32 (binade 256 .. 448), so:
--   max_abs 32: one step anywhere; a row whose scale is off by more than ~12 % moves its 448 by two
--     steps (448 / 1.12 = 400 rounds to 384, 448 * 1.12 saturates while its 300s move to 352) and fails;
--   rel_l2 1e-2: twice the worst straddle bound; a systematic scale error of a few % (every element
--     shifted by it), a wrong constant (e4m3fnuz's 240), a missing weight or eps fails it.
-- The dynamic scale output agrees to ~1e-6 relative (checked by rel_l2), h exactly.

local EPS = 1e-6
local E4M3_MAX = 448

local function threads_per_row(c) return c.ROW_MODE == 0 and 32 or c.BLOCK end
local function cdiv(a, b) return string.format("((%s + %s - 1) // %s)", a, b, b) end
-- vectors per thread of a row (the last ones masked); recipes/rmsnorm.lua's
local ITERS = cdiv(cdiv("H", "(VEC_BYTES // 2)"), "(ROW_MODE == 0 and 32 or BLOCK)")

-- recipes/rmsnorm.lua's register model: a cached slice of raw bf16 vectors, possibly unpacked to
-- fp32 (twice), plus ~24 registers of addresses and state, under the launch-bounds cap. The dynamic
-- mode also holds the slice's weights for max |h w| (NVRTC hoists their loads), and so does the
-- static mode with W_AHEAD: 2.5 times the slice, which keeps every kept variant free of spills (a
-- warp's slice of 7168 at 112 registers spills; 5120 at 80 does not).
local function cache_fits(c, it, dynamic)
  if c.CACHE_ROW == 0 then return true end
  local cap = math.min(255, 65536 // (c.BLOCK * c.MIN_BLOCKS))
  return ((dynamic or c.W_AHEAD == 1) and 5 or 4) * it * c.VEC_BYTES // 8 + 24 <= cap
end

-- hidden sizes of models (Llama 3 8B / 70B 4096 / 8192, Llama 2 13B 5120, DeepSeek-V3 7168, 2048,
-- and 14336, an MLP width) and tails: 4000 (no multiple of 64), 8200, 2049 (odd: the scalar path)
local DYNAMIC = {
  { 16384, 4096 }, { 4096, 8192 }, { 4096, 5120 }, { 4096, 7168 }, { 8192, 2048 }, { 2048, 14336 },
  { 1, 4096 }, { 16, 7168 }, { 64, 8192 },                      -- decode batches
  { 1000, 4000 }, { 37, 8200 }, { 1000, 2049 },                 -- tails
}
local STATIC = { { 16384, 4096 }, { 4096, 8192 }, { 16, 7168 }, { 1, 4096 }, { 1000, 2049 } }

local function problems(list, quant)
  local t = {}
  for _, s in ipairs(list) do
    t[#t + 1] = { name = string.format("t%dh%d_%s", s[1], s[2], quant), T = s[1], H = s[2], quant = quant }
  end
  return t
end

local function recipe(quant)
  local dynamic = quant == "dynamic"
  local scale = dynamic and { "scale", tensor = "f32", shape = { "T" }, output = true }
    or { "scale", tensor = "f32", shape = { 1 }, init = { "uniform", 6 / E4M3_MAX, 10 / E4M3_MAX } }
  return {
    name = dynamic and "rmsnorm.fp8" or "rmsnorm.fp8_static",
    template = "templates/rmsnorm/rmsnorm_fp8.cuh",
    kernel = "rmsnorm_fp8_kernel",

    params = {
      { "ROW_MODE",   { 0, 1 } },                 -- 0: a row per warp, 1: a row per block
      { "BLOCK",      { 128, 256, 512, 1024 } },  -- threads per block (warp mode: BLOCK / 32 rows)
      { "VEC_BYTES",  { 4, 8, 16 } },             -- bytes per bf16 load / store (y: half as many)
      { "CACHE_ROW",  { 1, 0 } },                 -- 1: the row slice (h) stays in registers
      { "CACHE_HINT", { 0, 1 } },                 -- ld.global.nc / st.global.cs on the row tensors
      { "MIN_BLOCKS", { 1, 2 } },                 -- __launch_bounds__ minimum blocks per SM
      { "W_AHEAD",    dynamic and { 0 } or { 0, 1 } }, -- static: weights loaded before the reduction
    },

    constraints = {
      "ROW_MODE == 1 or BLOCK <= 512",
      "MIN_BLOCKS == 1 or (CACHE_ROW == 1 and (BLOCK == 256 or BLOCK == 512))",
      -- 1024 threads have 64 registers each: the re-reading loop's 64 B of x and r in flight plus
      -- the weights of max |h w| spill unless they come in 16-byte vectors
      dynamic and "BLOCK < 1024 or CACHE_ROW == 1 or VEC_BYTES == 16" or "true",
      "W_AHEAD == 0 or CACHE_ROW == 1",
    },

    requires = { "CACHE_ROW == 0 or " .. ITERS .. " * VEC_BYTES <= 512" },

    applies = function(c, p)
      local ve = c.VEC_BYTES // 2
      local tpr = threads_per_row(c)
      local it = ((p.H + ve - 1) // ve + tpr - 1) // tpr
      if not cache_fits(c, it, dynamic) then
        return false, string.format("cached slice of %d B per thread does not fit the register cap", it * c.VEC_BYTES)
      end
      return true
    end,

    defines = { ITERS = "CACHE_ROW == 1 and " .. ITERS .. " or 0", QUANT = "quant == 'dynamic' and 1 or 2" },

    problems = problems(dynamic and DYNAMIC or STATIC, quant),

    domain = { "T >= 1", "H >= 1", "H <= 1048576", "quant == '" .. quant .. "'" },
    fallback = { ROW_MODE = 1, BLOCK = 256, VEC_BYTES = 16, CACHE_ROW = 0, CACHE_HINT = 1, MIN_BLOCKS = 1, W_AHEAD = 0 },

    launch = {
      grid = { "ROW_MODE == 0 and (T + BLOCK // 32 - 1) // (BLOCK // 32) or T", 1, 1 },
      block = { "BLOCK", 1, 1 },
      shared = 0,
    },

    args = {
      -- second set: x, r of std 300: sums of squares ~1e9 per row, past fp16's 65504 (an fp16 accumulation overflows)
      { "x",   tensor = "bf16", shape = { "T", "H" }, init = { "normal", 0, 1 }, adversarial = { "normal", 0, 300 } },
      { "r",   tensor = "bf16", shape = { "T", "H" }, init = { "normal", 0, 2 }, adversarial = { "normal", 0, 300 } },
      { "w",   tensor = "bf16", shape = { "H" }, init = { "normal", 0, 1 } },
      { "y",   tensor = "e4m3", shape = { "T", "H" }, output = true },
      { "h",   tensor = "bf16", shape = { "T", "H" }, output = true },
      scale,
      { "T",   scalar = "i32", value = "T" },
      { "H",   scalar = "i32", value = "H" },
      { "eps", scalar = "f32", value = EPS },
    },

    reference = {
      source = "templates/rmsnorm/reference_fp8.cuh",
      kernel = "rmsnorm_fp8_reference",
      grid = { "T", 1, 1 },
      block = { 256, 1, 1 },
      defines = function(p) return { QUANT = p.quant == "dynamic" and 1 or 2 } end,
    },

    tolerance = { rel_l2 = 1e-2, max_abs = 32 },

    metrics = {
      -- x, r read and h written (bf16), y written (e4m3), w read once, the scale
      bytes = "7 * T * H + 2 * H + 4 * (quant == 'dynamic' and T or 1)",
      flops = 0,
    },
  }
end

return { recipe("dynamic"), recipe("static") }
