-- moe/swiglu_fp8.lua: SwiGLU + fp8 e4m3 quantization in one pass, templates/moe/swiglu_fp8.cuh: what
-- an FP8 MoE layer runs between its gate/up expert GEMM (bf16 output) and its down expert GEMM (e4m3
-- activations with f32 scales), where engines run silu_and_mul and then a quantization kernel:
--   x [T][2N] bf16                 the gate/up GEMM's output, T routed rows (tokens * top_k), N the
--                                  expert intermediate size: gate = x[:, :N], up = x[:, N:] (vLLM's
--                                  silu_and_mul layout)
--   h = silu(gate) * up            fp32 from the bf16 inputs, not rounded to bf16
--   y = e4m3(h / scale)            [T][N], nearest even, saturated to +-448
-- Three scalings, the three scale_a forms of moe.grouped_fp8 (recipes/moe/grouped_fp8.lua), each
-- scale max(amax / 448, 1 / (448 * 512)) (vLLM's floor: a group of zeros stays finite), the rule of
-- tunert.torch's e4m3_scale:
--   group   1 x 128 groups along N (DeepSeek-V3 / DeepGEMM activation scales): scale [T][ceil(N/128)]
--           written, row-major, the last group partial (scale 'block' of moe.grouped_fp8)
--   token   per row: scale [T] written (scale 'row')
--   static  scale [1] read: a calibrated per-tensor scale; values past 448 * scale saturate ('tensor')
-- Two recipes, one template (define QUANT), because the scale's direction differs: moe.swiglu_fp8
-- (group and token, scale written) and moe.swiglu_fp8_static (scale read). The mode is also the
-- problem dim `quant` ('group' | 'token' | 'static'), so each recipe's domain names it and a bundle's
-- selection keys on it. The scale is one flat f32 tensor in every mode (group: T * ceil(N / 128)).
--
-- Memory-bound: 4 T N bytes read (x), T N written (y), plus the scales; the silu takes an ex2 and a
-- fast divide per element, well under the SM's budget at DRAM speed. Tunables (rmsnorm's thread map):
-- a row per warp or per block (ROW_MODE, BLOCK), the load width (VEC_BYTES 8 or 16: 4 or 8 columns,
-- y stored 4 or 8 bytes at a time), LOADS passes of gate and up vectors in flight per thread, and in
-- the token mode CACHE_ROW: the row's h kept in registers (ITERS vectors a thread) rather than read
-- again for the quantization pass; in the group and static modes, which need no row-wide reduction,
-- SPLIT blocks per row along N (grid.y), so that a few rows (decode) still spread over the SMs. The group mode needs no row reduction: a group's 128 columns are
-- 16 or 32 lanes of one warp in one pass, reduced by shuffles. Every field libtunert evaluates is an
-- expression: bundled variants serve untuned T and N. Domain: T >= 1, N % 8 == 0 (every vector of
-- gate, up and y aligned for both widths; no scalar path); tails of N are masked per vector, a
-- partial last group is reduced over its columns only.
--
-- Inputs. Per-group scales matter where the groups' ranges differ. x ~ N(0, 2) for gate and up (one
-- distribution per tensor): the gate spans +-8, where silu is not linear (|g| < 4 holds 95 % of it, a
-- negative gate is squashed towards 0), and h = silu(g) u, a product of two normals, has exponential
-- tails: rms ~2.6, a group's amax ~14 (median) but 7 .. 47 across groups (a group holding one
-- outlier has three times the median's scale), a row's ~25 (9 times its rms). y then spans e4m3 from
-- its subnormals to 448 in every group. No zeros (normal draws). The static scale, U(16, 24) / 448,
-- is below most rows' amax, so 0.05 .. 0.3 % of the elements saturate (the clamp is exercised) while
-- the bulk stays in range. Second set (adversarial): x ~ N(0, 100): gates of +-400, where e^g
-- overflows fp32 (a sigmoid written e^g / (1 + e^g) gives NaN; silu's x / (1 + 2^(-x log2 e)) gives
-- the limit -0), and |h| up to ~1e5, past fp16's 65504 (an fp16 intermediate overflows).
--
-- Tolerance. The reference (templates/moe/swiglu_fp8_reference.cuh) computes h, the scales (from the
-- fp64 amax, rounded to f32) and h / scale in fp64. A variant's h carries ex2.approx (~2^-22 relative)
-- and the fast divide and product (~2 ulp), its scale comes from that h's amax, and it multiplies by
-- the scale's rounded reciprocal: h * q differs from the exact h / scale by a relative delta <= ~2e-6.
-- y then differs only where the exact value lies within delta of a rounding midpoint, by one e4m3
-- step: the step is 2^-3 .. 2^-4 of |y| (3 mantissa bits), so a fraction ~2 delta / 2^-4 <= 1e-4 of
-- the elements moves by <= 2^-3 of its value: rel_l2 <= sqrt(1e-4) * 2^-3 = 1.3e-3 in the worst case.
-- The largest step is 32 (binade 256 .. 448), so:
--   max_abs 32: one step anywhere; a scale off by more than ~12 % moves its group's 448 by two steps
--     and fails, as does a group scaled by its neighbour's amax (groups differ by up to 3 times);
--   rel_l2 1e-2: eight times the worst straddle bound; a systematic scale error of a few %, a wrong
--     constant (e4m3fnuz's 240), a swapped gate and up (silu(u) g: rel_l2 ~0.9) fail it. h rounded
--     to bf16 before the quantization (the unfused engines' h) gives rel_l2 ~1.2e-2 on these inputs:
--     caught, narrowly; h in fp16 (~4e-3) is not, except on the second set, where it overflows.
-- The scale outputs agree to ~2e-6 relative (checked by rel_l2).

local E4M3_MAX = 448

local function cdiv(a, b) return string.format("((%s + %s - 1) // %s)", a, b, b) end
local THREADS = "(ROW_MODE == 0 and 32 or BLOCK)"   -- threads sharing a row
-- vectors per thread of a row (the last ones masked): the token mode's cached h
local ITERS = cdiv(cdiv("N", "(VEC_BYTES // 2)"), THREADS)

local function threads_per_row(c) return c.ROW_MODE == 0 and 32 or c.BLOCK end

-- Register model of the cached row (token mode): h, ITERS * VEC_BYTES / 2 floats, plus the raw gate
-- and up words while they are converted (as many again), plus ~24 of addresses and state, under the
-- launch-bounds cap (BLOCK threads of one block per SM at least).
local function cache_fits(c, it)
  local cap = math.min(255, 65536 // c.BLOCK)
  return 2 * it * (c.VEC_BYTES // 2) + 24 <= cap
end

-- { T, N }: T = tokens * top_k routed rows
local DSV3 = { { 8, 2048 }, { 512, 2048 }, { 8192, 2048 }, { 65536, 2048 } }  -- DeepSeek-V3's experts
local QWEN3 = { { 64, 1536 }, { 4096, 1536 } }                               -- Qwen3-235B-A22B's
local MIXTRAL = { { 2, 14336 }, { 8192, 14336 } }                            -- Mixtral-8x7B's
local TAILS = { { 37, 1096 }, { 1001, 1000 } }  -- N no multiple of 128 (a partial group), T odd

local function concat(...)
  local t = {}
  for _, l in ipairs({ ... }) do for _, s in ipairs(l) do t[#t + 1] = s end end
  return t
end

local function problems(list, quant)
  local t = {}
  for _, s in ipairs(list) do
    t[#t + 1] = { name = string.format("t%dn%d_%s", s[1], s[2], quant), T = s[1], N = s[2], quant = quant }
  end
  return t
end

local function recipe(dynamic)
  local scale = dynamic
      and { "scale", tensor = "f32", shape = { "quant == 'group' and T * " .. cdiv("N", 128) .. " or T" }, output = true }
      or { "scale", tensor = "f32", shape = { 1 }, init = { "uniform", 16 / E4M3_MAX, 24 / E4M3_MAX } }
  return {
    name = dynamic and "moe.swiglu_fp8" or "moe.swiglu_fp8_static",
    template = "templates/moe/swiglu_fp8.cuh",
    kernel = "swiglu_fp8_kernel",

    params = {
      { "ROW_MODE",  { 0, 1 } },                 -- 0: a row per warp, 1: a row per block
      { "BLOCK",     { 128, 256, 512, 1024 } },  -- threads per block (warp mode: BLOCK / 32 rows)
      { "VEC_BYTES", { 16, 8 } },                -- bytes per bf16 load (y: half as many)
      { "LOADS",     { 2, 1, 4 } },              -- passes of gate and up vectors loaded ahead
      { "CACHE_ROW", dynamic and { 0, 1 } or { 0 } },  -- token mode: the row's h held in registers
      -- group and static modes: blocks per row along N (a few rows still spread over the SMs)
      { "SPLIT",     { 1, 4, 16, 64 }, absent = 1 },
    },

    constraints = {
      "ROW_MODE == 1 or BLOCK <= 512",
      "CACHE_ROW == 0 or LOADS == 1",  -- the cached row is loaded at once: LOADS does not apply
    },

    -- the template's capacity of the cached row and its split rule (its static_asserts)
    requires = { "CACHE_ROW == 0 or " .. ITERS .. " * (VEC_BYTES // 2) <= 64", "SPLIT == 1 or quant ~= 'token'" },

    applies = function(c, p)
      local ve = c.VEC_BYTES // 2
      local tpr = threads_per_row(c)
      if p.quant ~= "token" and c.CACHE_ROW == 1 then
        return false, "one pass over the row: nothing to cache"
      end
      if c.SPLIT > 1 then
        if p.quant == "token" then return false, "token: the row's scale needs all of it in one block" end
        local passes = (p.N + tpr * ve - 1) // (tpr * ve)
        if c.SPLIT > passes then return false, "more splits than passes over the row" end
        local row_blocks = c.ROW_MODE == 0 and (p.T + c.BLOCK // 32 - 1) // (c.BLOCK // 32) or p.T
        if row_blocks >= 512 then return false, "enough rows to fill the SMs unsplit" end
      end
      if tpr * ve > 2 * p.N then
        return false, "a pass covers over twice the row: most threads idle"
      end
      local it = ((p.N + ve - 1) // ve + tpr - 1) // tpr
      if c.CACHE_ROW == 1 and not cache_fits(c, it) then
        return false, string.format("cached row of %d floats per thread does not fit the register cap", it * ve)
      end
      return true
    end,

    defines = {
      ITERS = "CACHE_ROW == 1 and " .. ITERS .. " or 0",
      QUANT = "quant == 'group' and 1 or (quant == 'token' and 2 or 3)",
    },

    problems = dynamic
        and concat(problems(concat(DSV3, QWEN3, TAILS), "group"), problems(concat(DSV3, QWEN3, MIXTRAL, TAILS), "token"))
        or problems(concat(MIXTRAL, TAILS), "static"),

    domain = { "T >= 1", "N >= 8", "N % 8 == 0", "N <= 1048576",
               dynamic and "quant == 'group' or quant == 'token'" or "quant == 'static'" },
    -- a row per block of 128 threads: no tuned problem prunes it (a pass of 1024 columns)
    fallback = { ROW_MODE = 1, BLOCK = 128, VEC_BYTES = 16, LOADS = 2, CACHE_ROW = 0, SPLIT = 1 },

    launch = {
      grid = { "ROW_MODE == 0 and (T + BLOCK // 32 - 1) // (BLOCK // 32) or T", "SPLIT", 1 },
      block = { "BLOCK", 1, 1 },
      shared = 0,
    },

    args = {
      -- second set: gates of +-400 (e^g overflows fp32) and |h| past fp16's range
      { "x",     tensor = "bf16", shape = { "T", "2 * N" }, init = { "normal", 0, 2 }, adversarial = { "normal", 0, 100 } },
      { "y",     tensor = "e4m3", shape = { "T", "N" }, output = true },
      scale,
      { "T",     scalar = "i32", value = "T" },
      { "N",     scalar = "i32", value = "N" },
    },

    reference = {
      source = "templates/moe/swiglu_fp8_reference.cuh",
      kernel = "swiglu_fp8_reference",
      grid = { "T", 1, 1 },
      block = { 256, 1, 1 },
      defines = function(p) return { QUANT = p.quant == "group" and 1 or (p.quant == "token" and 2 or 3) } end,
    },

    tolerance = { rel_l2 = 1e-2, max_abs = 32 },

    metrics = {
      -- x read (bf16 gate and up), y written (e4m3), the scales (written, or the static one read)
      bytes = "4 * T * N + T * N + 4 * (quant == 'group' and T * " .. cdiv("N", 128)
          .. " or (quant == 'token' and T or 1))",
      flops = 0,
    },
  }
end

return { recipe(true), recipe(false) }
