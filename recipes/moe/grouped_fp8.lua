-- moe/grouped_fp8.lua: FP8 e4m3 grouped GEMM for Mixture-of-Experts, templates/gemm/grouped_fp8_sm90.cuh:
-- c_e = bf16( dequant(a_e) @ dequant(w[e])^T ) for every expert in one launch, w [E][N][K] e4m3
-- (nn.Linear weights), the partial sums promoted to fp32 every 128 of K (gemm.fp8's mainloop, its
-- tunables and tolerance: recipes/gemm/fp8.lua, recipes/gemm/shared/fp8.lua). Two recipes, one per
-- layout an engine keeps its routed tokens in (as recipes/moe/grouped.lua):
--   moe.grouped_fp8         contiguous: a [T][K] sorted by expert, offsets i32 [E + 1], c [T][N]
--   moe.grouped_fp8_masked  masked: a [E][cap][K], counts i32 [E], c [E][cap][N]; the padding rows of
--                           c are written with zeros (ZERO_PAD 1: every output element is compared)
-- The problem dim `scale` picks the scaling, over the rows of a's 2-D view and per expert for w:
--   'tensor'  scale_a [1], scale_w [E]                 (per-tensor FP8 checkpoints: one weight scale
--                                                      per expert, one activation scale)
--   'row'     scale_a [rows] per token, scale_w [E][N] per expert and channel
--   'block'   scale_a [rows][ceil(K/128)] (1 x 128), scale_w [E][ceil(N/128)][ceil(K/128)] (128 x 128):
--             DeepSeek-V3's, as DeepGEMM's grouped GEMMs take them
--
-- Problems: DeepSeek-V3 (E 256, hidden 7168, expert intermediate 2048, top-8; block and row scales):
-- gate+up fused (N 4096, K 7168) and down (N 7168, K 2048) at 64 tokens (T 512) and 1024 tokens (T
-- 8192), and at decode, 1 and 8 tokens (T 8, 64) routed to a few of the 256 experts (min_tokens 0:
-- a launch sized for every expert's tiles would be mostly empty blocks there; these entries serve a
-- layer's decode steps); Mixtral-8x7B in FP8 (E 8, top-2; tensor and row scales): gate+up (N
-- 28672, K 4096) and down (N 4096, K 14336) at 16 tokens (T 32) and 2048 (T 4096); a tail (N, K no
-- tile's or scale block's multiple, empty experts) in every scaling. Routing:
-- the skewed `offsets` of recipes/moe/grouped.lua (min_tokens 1: every expert's weights are read).
-- Masked: DeepSeek-V3's at a capacity of 16 (decode, block scales) and 256 (gate+up), and the tail.
--
-- Metrics: flops 2 * rows * N * K (masked: the expected counted rows); bytes: a and w (1 byte each;
-- every expert's weights, read once; min_tokens 0: one expert's, the least the drawn routing reads,
-- so that a bandwidth never reads above what moved), c (bf16), the scales.

local space = require "gemm.shared.fp8"

local experts = require "moe.shared.experts"
local TABLE_BYTES = experts.TABLE_BYTES  -- after the kernel's own shared memory
local SMEM = "(" .. space.SMEM .. " + " .. TABLE_BYTES .. ")"
local TILES_N = "((N + BLOCK_N - 1) // BLOCK_N)"
local function grid_x(tiles) return "PERSISTENT == 1 and min(" .. tiles .. ", sm_count) or " .. tiles end

-- Tiles by rows per expert: fewer than 16 (decode), the tiles of 64 rows; more than 512, the tiles of
-- 128; in between both (a skewed routing gives some experts hundreds of rows and most a few).
local function applies(rows_per_expert)
  return function(c, p)
    local r = rows_per_expert(p)
    local large = space.in_list(space.SHAPES_LARGE, c.BLOCK_M, c.BLOCK_N, c.CONSUMERS)
    if r < 16 and large then return false, "decode: tiles of 64 rows" end
    if r > 512 and not large then return false, "prefill: tiles of 128 rows" end
    return true
  end
end

local function problem(fmt, t)
  t.name = string.format(fmt, t.E, t.N, t.K, t.T or t.cap, t.min_tokens or t.min_count, t.scale)
  return t
end

-- { E, N, K }: the layers' GEMMs (gate+up fused: N = 2 * intermediate; down: N = hidden)
local DEEPSEEK = { { 256, 4096, 7168 }, { 256, 7168, 2048 } }
local MIXTRAL = { { 8, 28672, 4096 }, { 8, 4096, 14336 } }
local TAIL = { 8, 1040, 1072 }
local SCALES = { "tensor", "row", "block" }

local function contiguous_problems()
  local t = {}
  local function add(s, T, min_tokens, scale)
    t[#t + 1] = problem("e%dn%dk%dt%dm%d_%s", { E = s[1], N = s[2], K = s[3], T = T, min_tokens = min_tokens, scale = scale })
  end
  for _, s in ipairs(DEEPSEEK) do
    for _, T in ipairs({ 512, 8192 }) do add(s, T, 1, "block"); add(s, T, 1, "row") end
    for _, T in ipairs({ 8, 64 }) do add(s, T, 0, "block"); add(s, T, 0, "row") end
  end
  for _, s in ipairs(MIXTRAL) do
    for _, T in ipairs({ 32, 4096 }) do add(s, T, 1, "tensor"); add(s, T, 1, "row") end
  end
  for _, scale in ipairs(SCALES) do add(TAIL, 1000, 0, scale) end
  return t
end

local function masked_problems()
  local t = {}
  local function add(s, cap, min_count, scale)
    t[#t + 1] = problem("e%dn%dk%dcap%dm%d_%s", { E = s[1], N = s[2], K = s[3], cap = cap, min_count = min_count, scale = scale })
  end
  add(DEEPSEEK[1], 16, 1, "block"); add(DEEPSEEK[2], 16, 1, "block"); add(DEEPSEEK[1], 256, 0, "block")
  for _, scale in ipairs(SCALES) do add(TAIL, 300, 0, scale) end
  return t
end

local KB, NB = space.KB, space.NB
-- the rows of a's and c's 2-D views
local function view_rows(layout) return layout == "contiguous" and "T" or "E * cap" end
-- the scales' element counts (SCALE_MODE's shapes in grouped_fp8_sm90.cuh)
local function scale_numel(layout)
  local rows = view_rows(layout)
  return "(scale == 'block' and " .. rows .. " * " .. KB .. " or scale == 'row' and " .. rows .. " or 1)",
      "(scale == 'block' and E * " .. NB .. " * " .. KB .. " or scale == 'row' and E * N or E)"
end
local function scale_args(layout)
  local a, w = scale_numel(layout)
  return {
    { "scale_a", tensor = "f32", shape = { a }, init = { "uniform", space.SCALE_LO, space.SCALE_HI } },
    { "scale_w", tensor = "f32", shape = { w },
      init = { "uniform", space.SCALE_LO .. " / sqrt(K)", space.SCALE_HI .. " / sqrt(K)" } },
  }
end

-- the args in the kernel's order: a, w, c, groups, scale_a, scale_w, E, M, N, K, tmA, tmW (the peers,
-- tools/peers/peer_family_moe_fp8.py, seed the routing by the groups' index, 3)
local function args(layout)
  local contiguous = layout == "contiguous"
  local rows = view_rows(layout)
  local t = contiguous and {
    { "a", tensor = "e4m3", shape = { "T", "K" }, init = { "normal", 0, 1 } },
    { "w", tensor = "e4m3", shape = { "E", "N", "K" }, init = { "normal", 0, 1 } },
    { "c", tensor = "bf16", shape = { "T", "N" }, output = true },
    { "offsets", tensor = "i32", shape = { "E + 1" }, init = { "offsets", "T", "min_tokens" } },
  } or {
    { "a", tensor = "e4m3", shape = { "E", "cap", "K" }, init = { "normal", 0, 1 } },
    { "w", tensor = "e4m3", shape = { "E", "N", "K" }, init = { "normal", 0, 1 } },
    { "c", tensor = "bf16", shape = { "E", "cap", "N" }, output = true },
    { "counts", tensor = "i32", shape = { "E" }, init = { "randint", "min_count", "cap" } },
  }
  for _, s in ipairs(scale_args(layout)) do t[#t + 1] = s end
  t[#t + 1] = { "E", scalar = "i32", value = "E" }
  t[#t + 1] = { "M", scalar = "i32", value = contiguous and "T" or "cap" }
  t[#t + 1] = { "N", scalar = "i32", value = "N" }
  t[#t + 1] = { "K", scalar = "i32", value = "K" }
  -- one 128-byte row of K per box row (e4m3 maps are UINT8), 128-byte swizzle, boxes clipped to the
  -- 2-D views (the kernel's transaction counts the clipped boxes)
  t[#t + 1] = { "tmA", tensormap = { tensor = "a", swizzle = 128, dims = { "K", rows }, box = { 128, "min(BLOCK_M, " .. rows .. ")" } } }
  t[#t + 1] = { "tmW", tensormap = { tensor = "w", swizzle = 128, dims = { "K", "E * N" }, box = { 128, "min(BLOCK_N, E * N)" } } }
  return t
end

local function reference(layout)
  return {
    source = "templates/gemm/reference_grouped_fp8.cuh",
    kernel = "grouped_gemm_fp8_reference",
    grid = { "(N + 15) // 16", "(" .. view_rows(layout) .. " + 15) // 16", 1 },
    block = { 16, 16, 1 },
    shared = 0,
    defines = function(p)
      return { LAYOUT = layout == "contiguous" and 0 or 1, SCALE_MODE = p.scale == "block" and 2 or p.scale == "row" and 1 or 0 }
    end,
  }
end

local DOMAIN = { "E >= 1 and E <= 256", "N >= 16 and N % 16 == 0", "K >= 128 and K % 16 == 0", space.SCALE_DOMAIN }

local function recipe(layout)
  local contiguous = layout == "contiguous"
  local counted_rows = contiguous and "T" or "E * (min_count + cap) / 2"  -- expected (masked: counts are uniform)
  local experts_read = contiguous and "(min_tokens > 0 and E or 1)" or "E"
  local scale_a_numel, scale_w_numel = scale_numel(layout)
  local domain = { DOMAIN[1], DOMAIN[2], DOMAIN[3], DOMAIN[4], contiguous and "T >= 1" or "cap >= 1" }
  return {
    name = contiguous and "moe.grouped_fp8" or "moe.grouped_fp8_masked",
    template = "templates/gemm/grouped_fp8_sm90.cuh",
    kernel = "grouped_gemm_fp8",
    params = space.params(false),
    constraints = space.constraints(TABLE_BYTES),
    domain = domain,
    -- every config runs every problem of the domain (tails are the template's); this names the one
    -- limit of the kernel itself, the tile table's experts (expert_tiles.cuh kMaxExperts), so that
    -- `applies` only prunes the search and the bundled entries serve untuned problems
    requires = { "E <= 256" },
    applies = applies(contiguous and function(p) return p.T / p.E end or function(p) return p.cap / 2 end),
    defines = { LAYOUT = contiguous and "0" or "1", ZERO_PAD = "1", SCALE_MODE = space.SCALE_MODE },
    -- one warpgroup of 64 x 128 tiles, 4 K blocks deep: any problem of the domain
    fallback = { BLOCK_M = 64, BLOCK_N = 128, CONSUMERS = 1, STAGES = 4, FAST_ACCUM = 0, PART_BUFFERS = 1,
                 PERSISTENT = 0, RASTER = 1, RING_POS = 0 },
    problems = contiguous and contiguous_problems() or masked_problems(),
    launch = {
      grid = { grid_x(experts.tiles(layout, TILES_N)), 1, 1 },
      block = { "128 * (CONSUMERS + 1)", 1, 1 },
      shared = SMEM,
    },
    args = args(layout),
    reference = reference(layout),
    -- gemm.fp8's, for the same reasons (recipes/gemm/fp8.lua): the inputs keep |c| the same size
    tolerance = { rel_l2 = 5e-3, max_abs = 0.5 },
    metrics = {
      flops = "2 * " .. counted_rows .. " * N * K",
      bytes = view_rows(layout) .. " * K + " .. experts_read .. " * N * K + 2 * " .. view_rows(layout) .. " * N + 4 * (" .. scale_a_numel
          .. " + " .. scale_w_numel .. ")",
    },
  }
end

return { recipe("contiguous"), recipe("masked") }
