-- gemm/fp8.lua: FP8 e4m3 GEMM with a bf16 output, templates/gemm/fp8_sm90.cuh (Hopper wgmma, TMA):
--   c[M][N] = bf16( dequant(a[M][K]) @ dequant(b[N][K])^T ),  b stored [N][K] as nn.Linear keeps it.
-- Two recipes:
--   gemm.fp8       fp32 promotion of every 128-wide K block (FAST_ACCUM 0), each of the three
--                  scalings inference uses, chosen by the problem dim `scale`:
--                    'tensor'  scale_a [1], scale_b [1]                      (epilogue)
--                    'row'     scale_a [M] per token, scale_b [N] per channel (epilogue)
--                    'block'   scale_a [M][ceil(K/128)] (1 x 128), scale_b [ceil(N/128)][ceil(K/128)]
--                              (128 x 128), DeepGEMM's, applied per K block before the promotion
--   gemm.fp8_fast  'tensor' and 'row' with one wgmma accumulator over all of K (cuBLAS's "fast
--                  accumulation"): a recipe of its own because its tolerance must be wider (below).
-- One recipe for the three scalings, not three: one template, one argument list whose scale shapes
-- are expressions of `scale`, one bundle family whose selection keys on `scale` like any dim.
-- Scales are f32 tensors in device memory (an engine keeps them there), so one bundled variant serves
-- every scale value without a relaunch from the host.
--
-- Domain: M >= 1, N % 16 == 0, K % 16 == 0 (16-byte rows for the tensor maps), K >= 128 (the maps'
-- box is one 128-byte row of K); a K % 128 tail is a partial last block (block mode: its scale column
-- covers the rest). Boxes are clipped to M and N (min(BLOCK_M, M)), so decode sizes build their maps.
-- Every field libtunert evaluates is an expression (portable bundle entries).
--
-- Tolerance. Every a[m][k] b[n][k] is exact in fp32 (two 4-bit significands), so a variant differs
-- from the fp64 reference (templates/gemm/reference_fp8.cuh) only by
--   (1) the bf16 rounding of the output: both round to bf16, and they differ by one bf16 ulp where the
--       variant's fp32 value and the exact one straddle a rounding boundary (2^-8 .. 2^-7 of |c|);
--   (2) fp32 accumulation: per 128-wide K block, the tensor core's sum of 128 products (4 k32 steps; it
--       keeps ~14 bits, so <= 4 * 2^-13 |block sum| in the worst case), then one product and one add
--       in fp32 per block (2 * 2^-24 of the running sum), i.e. ~ (2^-11 + K/128 * 2^-23) * sum|a b|
--       summed with signs that vary block to block: relative to |c| ~ sqrt(K) sigma, the rms is
--       ~ 2^-11 = 5e-4, below (1).
-- The inputs keep |c| of the same size in every mode and at every K, so that one absolute bound
-- fits: a, b ~ N(0, 1) rounded to e4m3 (|x| < 5), scale_a ~ U(0.5, 2), scale_b ~ U(0.5, 2) / sqrt(K)
-- (tensor, row), and for block mode both drawn from U(1/64, 4) (a spread of 2^8 between blocks, so a
-- block scaled with its neighbour's scale is visible), scale_b again / sqrt(K). Then c ~ N(0, s^2)
-- with s = rms(sa) rms(sb) sqrt(K) = 1.75 (tensor, row) and 5.4 (block); over 1.5e8 outputs |c| stays
-- below ~8 s = 43, where a bf16 ulp is 0.25. So:
--   rel_l2 5e-3: (1) is at most one rounding's rms, ulp / sqrt(12) = 2^-8 .. 2^-7 of |c| over
--     sqrt(12) (less, as a straddle is rarer than every output), (2) ~2^-11; a 128-wide K block
--     lost or mis-scaled moves c by ~sqrt(128 / K) = 8 % at K = 18432;
--   max_abs 0.5: one ulp up to |c| = 128; a wrong tile moves its outputs by ~s (>= 1.75), its
--     largest by several s.
-- gemm.fp8_fast drops the promotion, so (2) becomes K / 32 steps of the tensor core's ~14-bit
-- accumulation, truncated (biased): up to ~ K/32 * 2^-14 of |c| = 2.7 % at K = 14336. Its tolerance,
-- rel_l2 3e-2 and max_abs 1.0, admits that and still fails a lost K block (>= 8 %) or a wrong tile.
-- The recorded variants' errors lie well inside these bounds (data/recorded/gemm.fp8.db keeps each
-- result's rel_l2 and max_abs); a correct variant reported wrong by a margin would mean the model of
-- (2) is off, not the kernel.

local space = require "gemm.shared.fp8"  -- the shapes, parameters and constraints moe.grouped_fp8 shares

local SHAPES_LARGE, SHAPES_DECODE, in_list = space.SHAPES_LARGE, space.SHAPES_DECODE, space.in_list

local function is_large(p) return p.M > 128 end

local function applies(c, p)
  if is_large(p) then
    if not in_list(SHAPES_LARGE, c.BLOCK_M, c.BLOCK_N, c.CONSUMERS) then return false, "prefill: tiles of 128 rows" end
  else
    if not in_list(SHAPES_DECODE, c.BLOCK_M, c.BLOCK_N, c.CONSUMERS) then return false, "decode: tiles of 64 rows" end
  end
  return true
end

-- Problems: Llama-3-8B (hidden 4096, MLP 14336) and DeepSeek-V3 (hidden 7168, dense MLP 18432)
-- projections; decode M 1, 16, 64 and prefill 4096, 8192; each in every scaling of the recipe.
local PREFILL = { { 4096, 14336, 4096 }, { 4096, 4096, 14336 }, { 4096, 4096, 7168 }, { 4096, 7168, 18432 },
                  { 8192, 18432, 7168 } }
local DECODE_NK = { { 14336, 4096 }, { 4096, 14336 }, { 18432, 7168 }, { 7168, 18432 } }
local DECODE_M = { 1, 16, 64 }
-- tails: M no tile's multiple, N not a multiple of 128 (a partial 128-column scale block and tile),
-- K % 128 = 48 or 64 (a partial last K block)
local TAILS = { { 1000, 1040, 1072 }, { 37, 4112, 4160 } }

-- fast: the prefill shapes, decode at M 16 and the tails (fast accumulation is a question of K)
local function problems(scales, fast)
  local t = {}
  local function add(m, n, k)
    for _, s in ipairs(scales) do
      t[#t + 1] = { name = string.format("m%dn%dk%d_%s", m, n, k, s), M = m, N = n, K = k, scale = s }
    end
  end
  for _, s in ipairs(PREFILL) do add(s[1], s[2], s[3]) end
  for _, m in ipairs(fast and { 16 } or DECODE_M) do
    for _, nk in ipairs(DECODE_NK) do add(m, nk[1], nk[2]) end
  end
  for _, s in ipairs(TAILS) do add(s[1], s[2], s[3]) end
  return t
end

local KB, NB = space.KB, space.NB
local SCALE_A_NUMEL = "(scale == 'block' and M * " .. KB .. " or scale == 'row' and M or 1)"
local SCALE_B_NUMEL = "(scale == 'block' and " .. NB .. " * " .. KB .. " or scale == 'row' and N or 1)"
local SCALE_LO, SCALE_HI = space.SCALE_LO, space.SCALE_HI

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
  -- one 128-byte row of K per box row (e4m3 maps are UINT8), 128-byte swizzle; rows clipped to the
  -- tensor so that decode sizes build (fp8_sm90.cuh: the rows past the box are never stored)
  { "tmA", tensormap = { tensor = "a", swizzle = 128, box = { 128, "min(BLOCK_M, M)" } } },
  { "tmB", tensormap = { tensor = "b", swizzle = 128, box = { 128, "min(BLOCK_N, N)" } } },
}

local SCALE_MODE = space.SCALE_MODE
local TILES = "((M + BLOCK_M - 1) // BLOCK_M) * ((N + BLOCK_N - 1) // BLOCK_N)"

local reference = {
  source = "templates/gemm/reference_fp8.cuh",
  kernel = "gemm_fp8_reference",
  grid = { "(N + 15) // 16", "(M + 15) // 16", 1 },
  block = { 16, 16, 1 },
  shared = 0,
  defines = function(p) return { SCALE_MODE = p.scale == "block" and 2 or p.scale == "row" and 1 or 0 } end,
}

local metrics = {
  flops = "2 * M * N * K",
  -- a and b (1 byte each) read once, c (bf16) written once, the scales read once
  bytes = "M * K + N * K + 2 * M * N + 4 * (" .. SCALE_A_NUMEL .. " + " .. SCALE_B_NUMEL .. ")",
}

local DOMAIN = { "M >= 1", "N >= 16 and N % 16 == 0", "K >= 128 and K % 16 == 0",
                 space.SCALE_DOMAIN }

local function recipe(name, fast, scales, tolerance)
  return {
    name = name,
    template = "templates/gemm/fp8_sm90.cuh",
    kernel = "gemm_fp8",
    params = space.params(fast),
    constraints = space.constraints(0),
    domain = fast and { DOMAIN[1], DOMAIN[2], DOMAIN[3], "scale == 'tensor' or scale == 'row'" } or DOMAIN,
    -- every config runs every problem of the domain (tails are the template's): nothing to require
    -- beyond it but the mode the fast path cannot serve
    requires = { "FAST_ACCUM == 0 or scale ~= 'block'" },
    applies = applies,
    defines = { SCALE_MODE = SCALE_MODE },
    -- one warpgroup of 64 x 128 tiles, 4 K blocks deep: any problem of the domain
    fallback = { BLOCK_M = 64, BLOCK_N = 128, CONSUMERS = 1, STAGES = 4, FAST_ACCUM = fast and 1 or 0,
                 PART_BUFFERS = 1, PERSISTENT = 0, RASTER = 1, RING_POS = 0 },
    problems = problems(scales, fast),
    launch = {
      grid = { "PERSISTENT == 1 and min(" .. TILES .. ", sm_count) or " .. TILES, 1, 1 },
      block = { "128 * (CONSUMERS + 1)", 1, 1 },
      shared = space.SMEM,
    },
    args = args,
    reference = reference,
    tolerance = tolerance,
    metrics = metrics,
  }
end

return {
  recipe("gemm.fp8", false, { "tensor", "row", "block" }, { rel_l2 = 5e-3, max_abs = 0.5 }),
  recipe("gemm.fp8_fast", true, { "tensor", "row" }, { rel_l2 = 3e-2, max_abs = 1.0 }),
}
