-- softmax.lua: row softmax, bf16 in/out, fp32 accumulation, templates/softmax/softmax.cuh.
-- Three recipes sharing the template and the problems' shapes:
--   "softmax"        one kernel; a row per warp (ROW_MODE 0) or per block (ROW_MODE 1)
--   "softmax.split"  a row split across SPLITS blocks: a stats kernel writes each slice's
--                    (max, sum) to a scratch buffer, a write kernel merges them and writes y
--   "softmax.cluster" a row over the CTAs of a thread-block cluster (below)
-- Memory-bound: the figure of merit is GB/s of x read + y written once, against the copy recipe's
-- bandwidth on the same device. A thread's slice of a row has a compile-time capacity (ITERS), so it
-- can stay in registers (CACHE_ROW).
-- EXP_ONCE adds cached forms that compute each exponential once (at 16 ex2 per clock per SM, two
-- ex2 per element cost ~16 us of SFU time per 32 Mi elements on a 132-SM part at 1.98 GHz, a
-- visible share of a bandwidth-bound row); PERSIST adds persistent grids that prefetch the next
-- row. With both at 0 a config compiles to the plain cached or streaming kernel.

-- Shape rules and launch geometry are expressions (runtime/tunert_expr.h): libtunert evaluates them
-- for row lengths that were not tuned. The row length is a kernel argument; a variant that caches its
-- slice in registers is compiled for a capacity, ITERS vectors per thread, so it serves every row
-- length of the same ITERS (its `defines`); the streaming forms (CACHE_ROW 0) serve any length.
local function cdiv(a, b) return string.format("((%s + %s - 1) // %s)", a, b, b) end
local VECS = cdiv("cols", "(VEC_BYTES // 2)")                 -- vectors per row (the last one partial)
local TPR = "(ROW_MODE == 0 and 32 or BLOCK)"                 -- threads per row
local ROW_ITERS = cdiv(VECS, TPR)                             -- vectors per thread, one segment a row
local SPLIT_ITERS = cdiv(cdiv(VECS, "SPLITS"), "BLOCK")       -- vectors per thread of a SPLITS-th
-- the rows any variant serves: the streaming forms (CACHE_ROW 0) take any length; 1 Mi columns
-- keeps every in-row offset a 32-bit int
local GROUPS = "(ROW_MODE == 0 and (rows + BLOCK // 32 - 1) // (BLOCK // 32) or rows)"
local DOMAIN = { "rows >= 1", "cols >= 1", "cols <= 1048576" }

-- Vectors per thread of a segment of `len` elements (the last ones masked).
local function iters(c, len, tpr)
  local ve = c.VEC_BYTES // 2
  local vecs = (len + ve - 1) // ve
  return (vecs + tpr - 1) // tpr
end
local function threads_per_row(c) return c.ROW_MODE == 0 and 32 or c.BLOCK end

-- A cached slice is held as raw bf16 vectors (VEC_BYTES / 4 registers each), but the compiler may
-- keep it unpacked to fp32 across the sweeps (twice that). It fits when twice the raw size plus
-- ~24 registers of addresses and state (40 with the online pair reduction: 8 B spilled at 64
-- registers, 64 B slices in 1024-thread blocks, NVRTC 13.0) stays under the __launch_bounds__ cap.
-- Slices that fit this way may still take up to 255 registers (one 256-thread block per SM):
-- the tuner measures what that occupancy costs.
-- EXP_ONCE holds the exponentials as fp32: the same estimate. PERSIST also holds the next row's raw
-- slice under a cap of PERSIST blocks per SM, and needs fewer registers besides: 16 in block mode,
-- 24 in warp mode (NVRTC 13.0 at 64 registers, 64 B slices: 1024-thread blocks fit, 128..1024-thread
-- warp-mode blocks at 1024 threads per SM spill 12 B; 256-thread blocks at 4 per SM spill 4 B, which
-- the PERSIST constraint leaves out).
local function cache_fits(c, it, min_blocks, persist)
  if c.CACHE_ROW == 0 then return true end
  local cap = math.min(255, 65536 // (c.BLOCK * math.max(min_blocks, persist)))
  local raw = it * c.VEC_BYTES // 4
  if persist > 0 then return 3 * raw + (c.ROW_MODE == 0 and 24 or 16) <= cap end
  return 2 * raw + (c.ONLINE == 1 and 40 or 24) <= cap
end

-- Row lengths of vocabularies (Llama 2 32000, Llama 3 128256, Qwen2 151936, GPT-2's odd 50257: rows
-- at any 2-byte boundary) and of hidden sizes that are no power of two: every variant's tails
-- (a partial last vector per thread, element-wise rows) verified against the reference.
local TAIL_PROBLEMS = {
  { name = "r256c32000",   rows = 256,  cols = 32000 },
  { name = "r64c128256",   rows = 64,   cols = 128256 },
  { name = "r64c151936",   rows = 64,   cols = 151936 },
  { name = "r64c50257",    rows = 64,   cols = 50257 },
  { name = "r1024c4000",   rows = 1024, cols = 4000 },
  { name = "r1024c5120",   rows = 1024, cols = 5120 },
  { name = "r1024c8200",   rows = 1024, cols = 8200 },
}

local PROBLEMS = {
  { name = "r16384c1024",  rows = 16384, cols = 1024 },     -- short rows: warp per row territory
  { name = "r4096c8192",   rows = 4096,  cols = 8192 },
  { name = "r1024c32768",  rows = 1024,  cols = 32768 },
  { name = "r256c131072",  rows = 256,   cols = 131072 },   -- vocabulary-sized logits, 256 sequences
  { name = "r64c131072",   rows = 64,    cols = 131072 },   -- 64 sequences: fewer rows than SMs
  -- four times the rows of the first and third: the smaller problems carry a fixed cost of a few
  -- microseconds beside their traffic that does not grow with the rows; these show the bandwidth
  -- once it is amortised (docs/benchmarks.md, "Where the time goes")
  { name = "r65536c1024",  rows = 65536, cols = 1024 },     -- e.g. 64k query rows over 1k keys
  { name = "r4096c32768",  rows = 4096,  cols = 32768 },    -- logits of 4096 tokens over a 32k vocabulary
}
local function with_tails(list)
  for _, p in ipairs(TAIL_PROBLEMS) do list[#list + 1] = p end
  return list
end
local SPLIT_PROBLEMS = with_tails({ PROBLEMS[3], PROBLEMS[4], PROBLEMS[5] })

-- second set: rows of std 40 (row max ~170): exp overflows fp32 unless the row max is subtracted first
local x_arg = { "x", tensor = "bf16", shape = { "rows", "cols" }, init = { "normal", 0, 3 },
                adversarial = { "normal", 0, 40 } }
local y_arg = { "y", tensor = "bf16", shape = { "rows", "cols" }, output = true }
local rows_arg = { "rows", scalar = "i32", value = "rows" }
local cols_arg = { "cols", scalar = "i32", value = "cols" }

-- Both sides are fp32 math rounded once to bf16 (the variants' ex2.approx differs from expf by
-- ~2^-22 relative): outputs differ by at most one bf16 ulp where the fp32 values straddle a
-- rounding boundary. The largest outputs are ~0.1-0.5 (the row max dominates with std 3), where one
-- ulp is <= 2^-9 ~ 0.002; the second set's near one-hot rows reach 1, where it is 2^-7 ~ 0.008.
-- honest: a bf16 intermediate (the row sum, or exp values before the division) would cost more than
-- one rounding of the exact output; fp32 math rounded once sits far below it.
local TOLERANCE = { rel_l2 = 1e-2, max_abs = 1e-2, honest = 1.25 }
local METRICS = {
  bytes = function(p) return 2 * 2 * p.rows * p.cols end,   -- x read once, y written once (bf16)
  flops = 0,
}

local row = {
  name = "softmax",
  template = "templates/softmax/softmax.cuh",
  kernel = "softmax_row",

  params = {
    { "ROW_MODE",   { 0, 1 } },                 -- 0: a row per warp, 1: a row per block
    { "BLOCK",      { 128, 256, 512, 1024 } },  -- threads per block (warp mode: BLOCK / 32 rows)
    { "VEC_BYTES",  { 4, 8, 16 } },             -- bytes per load / store (2, 4, 8 bf16)
    { "CACHE_ROW",  { 1, 0 } },                 -- 1: the row slice stays in registers (x read once)
    { "ONLINE",     { 0, 1 } },                 -- 1: (max, sum) in one sweep and one reduction
    { "MIN_BLOCKS", { 1, 2 } },                 -- __launch_bounds__ minimum blocks per SM
    { "EXP_ONCE",   { 0, 1 } },                 -- 1: one ex2 per element, kept in fp32 registers
    { "PERSIST",    { 0, 1, 2, 4, 8 } },        -- k > 0: persistent grid, k blocks per SM, next row prefetched
  },

  constraints = {
    -- MIN_BLOCKS only matters where registers are many: cached slices, two-pass math; 256 or 512
    -- threads (2 x 1024 would cap at 32 registers, 2 x 128 leaves occupancy at 8 warps anyway)
    "MIN_BLOCKS == 1 or (CACHE_ROW == 1 and ONLINE == 0 and (BLOCK == 256 or BLOCK == 512))",
    -- the SFU-bound cached forms with one exponential per element (2 and 4 B vectors lose anyway)
    "EXP_ONCE == 0 or (CACHE_ROW == 1 and VEC_BYTES >= 8)",
    -- persistent rows: the single-reduction form only, 512 to 2048 threads per SM; in block mode
    -- 512- and 1024-thread blocks only (the long rows it is for; 256-thread blocks spill, above)
    "PERSIST == 0 or (EXP_ONCE == 1 and ONLINE == 1 and MIN_BLOCKS == 1)",
    "PERSIST == 0 or (BLOCK * PERSIST >= 512 and BLOCK * PERSIST <= 2048 and (ROW_MODE == 0 or BLOCK >= 512))",
  },

  -- a cached slice of at most 256 B per thread (softmax.cuh's static_assert)
  requires = { "CACHE_ROW == 0 or " .. ROW_ITERS .. " * VEC_BYTES <= 256" },

  -- search-space pruning for the tuned problems: cached slices that fit the register cap
  applies = function(c, p)
    local it = iters(c, p.cols, threads_per_row(c))
    if not cache_fits(c, it, c.MIN_BLOCKS, c.PERSIST) then
      return false, string.format("cached slice of %d B per thread does not fit the register cap", it * c.VEC_BYTES)
    end
    return true
  end,

  defines = { ITERS = "CACHE_ROW == 1 and " .. ROW_ITERS .. " or 0" },

  problems = with_tails({ table.unpack(PROBLEMS) }),

  domain = DOMAIN,
  -- a block per row, one sweep for the statistics and one for the write: any row length
  fallback = { ROW_MODE = 1, BLOCK = 256, VEC_BYTES = 16, CACHE_ROW = 0, ONLINE = 1, MIN_BLOCKS = 1, EXP_ONCE = 0,
               PERSIST = 0 },

  launch = {
    -- row groups (warps or blocks); PERSIST k: at most k blocks per SM, looping over the rest
    grid = { "PERSIST > 0 and min(" .. GROUPS .. ", sm_count * PERSIST) or " .. GROUPS, 1, 1 },
    block = { "BLOCK", 1, 1 },
    shared = 0,
  },

  args = { x_arg, y_arg, rows_arg, cols_arg },

  reference = {
    source = "templates/softmax/reference.cuh",
    kernel = "softmax_reference",
    grid = { "rows", 1, 1 },
    block = { 256, 1, 1 },
  },

  tolerance = TOLERANCE,
  metrics = METRICS,
}

local split = {
  name = "softmax.split",
  template = "templates/softmax/softmax.cuh",

  params = {
    { "SPLITS",    { 2, 4, 8, 16 } },          -- blocks per row
    { "BLOCK",     { 128, 256, 512, 1024 } },
    { "VEC_BYTES", { 8, 16 } },                -- 4 B loads lose in the row recipe; not repeated here
    { "CACHE_ROW", { 1, 0 } },                 -- stats kernel: slice in registers
    { "ONLINE",    { 0, 1 } },
  },

  constraints = {
    -- the stats kernel sweeps its slice once unless it neither caches nor merges online: that
    -- three-sweep form is measured by the row recipe only
    "CACHE_ROW == 1 or ONLINE == 1",
  },

  requires = { "CACHE_ROW == 0 or " .. SPLIT_ITERS .. " * VEC_BYTES <= 256" },

  applies = function(c, p)
    local it = iters(c, (p.cols + c.SPLITS - 1) // c.SPLITS, c.BLOCK)
    if not cache_fits(c, it, 1, 0) then
      return false, string.format("cached slice of %d B per thread does not fit the register cap", it * c.VEC_BYTES)
    end
    return true
  end,

  defines = { ITERS = "CACHE_ROW == 1 and " .. SPLIT_ITERS .. " or 0" },

  problems = SPLIT_PROBLEMS,
  domain = DOMAIN,
  fallback = { SPLITS = 4, BLOCK = 256, VEC_BYTES = 16, CACHE_ROW = 0, ONLINE = 1 },

  launch = {
    { kernel = "softmax_split_stats", grid = { "SPLITS", "rows", 1 }, block = { "BLOCK", 1, 1 }, shared = 0 },
    { kernel = "softmax_split_write", grid = { "SPLITS", "rows", 1 }, block = { "BLOCK", 1, 1 }, shared = 0 },
  },

  args = {
    x_arg, y_arg,
    -- (max in log2 units, sum) per slice: [rows, SPLITS, 2] floats
    { "partial", tensor = "f32", scratch = true, shape = { "rows * SPLITS * 2" } },
    rows_arg, cols_arg,
  },

  reference = {
    source = "templates/softmax/reference.cuh",
    kernel = "softmax_split_reference",
    grid = { "rows", 1, 1 },
    block = { 256, 1, 1 },
  },

  tolerance = TOLERANCE,
  metrics = METRICS,
}

-- A row over the CTAs of a thread-block cluster (templates/softmax/cluster.cuh): CLUSTER small CTAs
-- per long row, each holding its slice in registers, the (max, sum) pairs pushed to every CTA
-- through distributed shared memory and one cluster barrier. For few long rows (64-256 rows of 128k:
-- one CTA per row leaves SMs idle) and for smaller CTAs per SM; on 1024 rows of 32k the cost it was
-- meant to cut, the last of 7.76 waves of whole rows, turned out not to be the cost (1056 rows take
-- longer than 1024: docs/benchmarks.md).
local cluster = {
  name = "softmax.cluster",
  template = "templates/softmax/softmax.cuh",
  kernel = "softmax_row",

  params = {
    { "CLUSTER",   { 2, 4, 8 } },
    { "BLOCK",     { 128, 256, 512 } },
    { "VEC_BYTES", { 8, 16 } },
    { "EXP_ONCE",  { 0, 1 } },
    { "ITERS",     { 1, 2, 4, 8, 16, 32 } },   -- vectors per thread held (a capacity: rows up to it)
  },

  constraints = { "ITERS * VEC_BYTES <= 256" },  -- softmax.cuh's cached-slice limit

  -- the CTA's segment (a CLUSTER-th of the row's vectors) fits its threads' ITERS vectors each
  requires = { cdiv(cdiv(cdiv("cols", "(VEC_BYTES // 2)"), "CLUSTER"), "BLOCK") .. " <= ITERS" },

  -- pruning for the tuned problems: the smallest capacity that fits, slices of 2048 elements or
  -- more per CTA, within the register cap
  applies = function(c, p)
    local len = (p.cols + c.CLUSTER - 1) // c.CLUSTER
    if len < 2048 then
      return false, string.format("slices of %d elements: the cluster split is for rows of 2048 per CTA or more", len)
    end
    local it = iters(c, len, c.BLOCK)
    if c.ITERS >= 2 * it then return false, "a smaller ITERS holds the slice" end
    local cf = { CACHE_ROW = 1, BLOCK = c.BLOCK, VEC_BYTES = c.VEC_BYTES, ONLINE = 1 }
    if not cache_fits(cf, c.ITERS, 1, 0) then
      return false, string.format("cached slice of %d B per thread does not fit the register cap", c.ITERS * c.VEC_BYTES)
    end
    return true
  end,

  defines = { ROW_MODE = "1", CACHE_ROW = "1", ONLINE = "1" },

  problems = { PROBLEMS[2], PROBLEMS[3], PROBLEMS[4], PROBLEMS[5], PROBLEMS[7],
               TAIL_PROBLEMS[1], TAIL_PROBLEMS[2], TAIL_PROBLEMS[3], TAIL_PROBLEMS[4], TAIL_PROBLEMS[7] },

  -- the largest capacity: 8 CTAs of 512 threads holding 16 vectors of 8 each
  domain = { "rows >= 1", "cols >= 1", "cols <= 8 * 512 * 16 * 8" },
  fallback = { CLUSTER = 8, BLOCK = 512, VEC_BYTES = 16, EXP_ONCE = 0, ITERS = 16 },

  launch = {
    grid = { "rows * CLUSTER", 1, 1 },
    block = { "BLOCK", 1, 1 },
    cluster = { "CLUSTER", 1, 1 },  -- consecutive blocks: one row's CTAs
    shared = 0,
  },

  args = row.args,
  reference = row.reference,
  tolerance = TOLERANCE,
  metrics = METRICS,
}

return { row, split, cluster }
