-- attention/prefill_sm90.lua: attention forward (prefill), the Hopper path: a producer warpgroup
-- fills a K/V ring through mbarriers, consumer warpgroups run wgmma (Q K^T from shared memory, P V with
-- P in registers) with the online softmax on the accumulators. sm_90a only.
-- Same arguments, layout, reference, tolerance and problems as attention/prefill.lua (the mma.sync
-- path), so that the two recipes' results compare problem by problem. Any S: tails are masked.
-- Every knob of templates/attention/prefill_sm90.cuh is a parameter here; D and causal are
-- compile-time defines of the problem.
-- USE_TMA = 1: one producer thread loads Q, K and V with bulk tensor copies through the tensor maps
-- tmQ, tmK, tmV that the worker builds per variant (docs/tensormap-args.md). Every kernel and the
-- reference take the three maps (TMA_ARGS = 1, REF_TMA_ARGS = 1), used or not.

-- Dynamic shared memory of a config at head dim D (templates/attention/prefill_sm90.cuh, kSmemBytes):
-- 1024 bytes of alignment slack, the Q tile, STAGES K and V tiles, 1 + 4 * STAGES (+ 1 persistent)
-- mbarriers.
local function smem_bytes(c, D)
  return 1024 + (64 * c.CONSUMERS + 2 * c.STAGES * c.BLOCK_N) * D * 2 + (1 + 4 * c.STAGES + c.PERSISTENT) * 8
end
local SMEM_LIMIT = 227 * 1024   -- sm_90 opt-in maximum per block; the template static_asserts the same
local SM_SMEM = 228 * 1024      -- shared memory of one sm_90 SM

-- Rows of a tensor map's box: the tile's rows for the TMA producer, clipped to S otherwise.
local function tma_rows(c, p, rows)
  if c.USE_TMA == 1 then return rows end
  return math.min(rows, p.S)
end

-- Query tiles per head.
local function q_tiles(c, p) return (p.S + 64 * c.CONSUMERS - 1) // (64 * c.CONSUMERS) end

return {
  name = "attention.prefill_sm90",
  template = "templates/attention/prefill_sm90.cuh",
  kernel = "attn_prefill_sm90",

  params = {
    { "BLOCK_N",   { 64, 96, 128, 176, 192 } },  -- keys per K/V tile (n of the Q K^T wgmma); 96, 192: several blocks per SM only
    { "CONSUMERS", { 1, 2, 3 } },       -- consumer warpgroups; query rows per block = 64 * CONSUMERS
    { "STAGES",    { 2, 3 } },          -- K/V ring depth
    { "OVERLAP",   { 0, 1 } },          -- 1: Q K_{j+1}^T and P_j V_j in flight together (FA3 style)
    { "SCHED",     { 0, 1, 2 } },       -- causal order: 0 natural, 1 longest first per head, 2 grouped heads, longest first
    -- 1: P V as D / 64 wgmma of n = 64 (no leading-byte offset): a fallback the template keeps in case
    -- the MN-major V descriptor is wrong; out of the space because PV_SPLIT=0 verifies on every problem
    { "PV_SPLIT",  { 0 } },
    { "PINGPONG",  { 0, 1 } },          -- 1: consumer warpgroups take turns issuing wgmma (FA3 schedule)
    { "USE_TMA",   { 0, 1 } },          -- 1: TMA producer (one thread; setmaxnreg 24 / 240 at 2 consumers, 40 / 232 persistent)
    -- 1: one wave of blocks (the SM count), each looping over tiles in SCHED order; the K/V ring runs
    -- on across tiles, so the next tile's loads overlap this one's last P V and epilogue
    -- 1 stays out of the space (the template code is kept): its outputs are wrong once a block loops
    -- over more than one tile, until its barrier protocol is fixed
    { "PERSISTENT", { 0 } },
    -- 2 | 3 | 4 (CONSUMERS 1): several blocks per SM (__launch_bounds__, setmaxnreg 24 / 232 at 2), so
    -- one block's prologue and epilogue overlap another's matmuls; at small D this can beat one block
    -- with more consumer warpgroups, which is why both shapes are in the space
    { "MIN_BLOCKS", { 1, 2, 3, 4 } },
    -- 1: the producer is one warp, not a warpgroup, without setmaxnreg (block = 128 * CONSUMERS + 32):
    -- each thread keeps the launch bound's registers (127 at 3 blocks per SM, 92 at 4)
    { "LEAN_PRODUCER", { 0, 1 } },
  },

  constraints = {
    -- registers per consumer thread (setmaxnreg: 160 with 3 consumers): O (D / 2) + S (BLOCK_N / 2)
    -- + P (BLOCK_N / 4) must leave room at 160; 3 consumers with BLOCK_N 176 spill at any D
    function(c) return c.CONSUMERS < 3 or c.BLOCK_N <= 128 end,
    -- the turn-taking schedule interleaves the overlapped batches of two or more warpgroups
    "PINGPONG == 0 or (OVERLAP == 1 and CONSUMERS >= 2)",
    -- the TMA producer only where the cp.async one's best variants lie (OVERLAP = 1 with 2 or 3
    -- consumers) and with several blocks per SM, which need it, rather than doubling the space
    "USE_TMA == 0 or MIN_BLOCKS >= 2 or (OVERLAP == 1 and CONSUMERS >= 2)",
    -- several blocks per SM: one consumer warpgroup and the TMA producer, with the register budgets that
    -- compile without spills or serialized wgmma (ptxas, sm_90a, D=64): 2 blocks: BLOCK_N up
    -- to 192 overlapped (setmaxnreg 232), lean up to 128; 3 blocks: 64 | 96 overlapped (entry 80,
    -- consumer 136; 128 does not compile), lean 64 overlapped or 96 | 128 not (127 registers); 4 blocks:
    -- 64 not overlapped. One block per SM takes the other tiles (no 96 or 192, no lean producer).
    function(c)
      if c.MIN_BLOCKS == 1 then return c.LEAN_PRODUCER == 0 and c.BLOCK_N ~= 96 and c.BLOCK_N ~= 192 end
      if c.CONSUMERS ~= 1 or c.USE_TMA ~= 1 then return false end
      if c.MIN_BLOCKS == 2 then
        if c.LEAN_PRODUCER == 1 then return c.BLOCK_N <= 128 end
        return c.OVERLAP == 1
      elseif c.MIN_BLOCKS == 3 then
        if c.LEAN_PRODUCER == 0 then return c.OVERLAP == 1 and c.BLOCK_N <= 96 end
        return (c.BLOCK_N == 64 and c.OVERLAP == 1) or (c.BLOCK_N >= 96 and c.BLOCK_N <= 128 and c.OVERLAP == 0)
      end
      return c.BLOCK_N == 64 and c.OVERLAP == 0
    end,
    -- persistent blocks with the TMA producer and a 2-deep ring only (the ring depth that won):
    -- 30 more configs, 216 in all
    "PERSISTENT == 0 or (USE_TMA == 1 and STAGES == 2)",
  },

  applies = function(c, p)
    if p.HQ % p.HKV ~= 0 then return false, "HQ must be a multiple of HKV" end
    if not p.causal and c.SCHED ~= 0 then
      return false, "SCHED only reorders causal work (same kernel as SCHED=0 when not causal)"
    end
    if p.D ~= 128 and c.PV_SPLIT ~= 0 then return false, "PV_SPLIT changes nothing at D=64" end
    if p.D == 128 and c.CONSUMERS == 3 then
      return false, "3 consumers at D=128: O, S and P do not fit in 160 registers"
    end
    if c.USE_TMA == 1 and p.S < math.max(c.BLOCK_N, 64 * c.CONSUMERS) then
      -- a box larger than the tensor is the driver's to refuse; the kernel expects full boxes
      return false, "USE_TMA needs S >= the tile rows (box " .. math.max(c.BLOCK_N, 64 * c.CONSUMERS) .. ")"
    end
    if c.MIN_BLOCKS * (smem_bytes(c, p.D) + 1024) > SM_SMEM then
      -- the SM's 228 KiB hold MIN_BLOCKS blocks, each with its 1 KiB reserved by the system
      return false, c.MIN_BLOCKS .. " blocks of " .. smem_bytes(c, p.D) .. " B shared memory do not fit an SM at D=" .. p.D
    end
    if smem_bytes(c, p.D) > SMEM_LIMIT then
      return false, "shared memory " .. smem_bytes(c, p.D) .. " B over 227 KiB at D=" .. p.D
    end
    return true
  end,

  defines = function(c, p) return { HEAD_DIM = p.D, IS_CAUSAL = p.causal, TMA_ARGS = 1 } end,

  problems = {
    { name = "b4h32s4096d128",      B = 4,  HQ = 32, HKV = 32, S = 4096,  D = 128, causal = false },
    { name = "b4h32s4096d128c",     B = 4,  HQ = 32, HKV = 32, S = 4096,  D = 128, causal = true },
    { name = "b16h16s1024d64",      B = 16, HQ = 16, HKV = 16, S = 1024,  D = 64,  causal = false },
    { name = "b2h16s16384d128c",    B = 2,  HQ = 16, HKV = 16, S = 16384, D = 128, causal = true },
    { name = "b8h32s2048d128c",     B = 8,  HQ = 32, HKV = 32, S = 2048,  D = 128, causal = true },
    { name = "b4h32s4096d128c_gqa8", B = 4, HQ = 32, HKV = 8,  S = 4096,  D = 128, causal = true },
  },

  -- SCHED 0 | 1: grid.x = query tiles of one head, so the blocks of one (b, h), which share K/V, run
  -- together. SCHED 2: one flat grid; the template maps blockIdx.x to (head group, tile, head).
  -- PERSISTENT: MIN_BLOCKS blocks per SM (at most one per tile), tiles taken in the same orders.
  launch = {
    grid = function(c, p, d)
      local tiles = q_tiles(c, p)
      if c.PERSISTENT == 1 then return { math.min(tiles * p.HQ * p.B, c.MIN_BLOCKS * d.sm_count), 1, 1 } end
      if c.SCHED == 2 then return { tiles * p.HQ * p.B, 1, 1 } end
      return { tiles, p.HQ, p.B }
    end,
    block = function(c) return { 128 * c.CONSUMERS + (c.LEAN_PRODUCER == 1 and 32 or 128), 1, 1 } end,
    shared = function(c, p) return smem_bytes(c, p.D) end,
  },

  args = {
    -- second set: q, k of std 5 give logits of std 25 (one dominant key): exp overflows unless the max is subtracted
    { "q", tensor = "bf16", shape = { "B", "HQ", "S", "D" },  init = { "normal", 0, 1 },
      adversarial = { "normal", 0, 5 } },
    { "k", tensor = "bf16", shape = { "B", "HKV", "S", "D" }, init = { "normal", 0, 1 },
      adversarial = { "normal", 0, 5 } },
    { "v", tensor = "bf16", shape = { "B", "HKV", "S", "D" }, init = { "normal", 0, 1 } },
    { "o", tensor = "bf16", shape = { "B", "HQ", "S", "D" },  output = true },
    { "B",   scalar = "i32", value = "B" },
    { "HQ",  scalar = "i32", value = "HQ" },
    { "HKV", scalar = "i32", value = "HKV" },
    { "S",   scalar = "i32", value = "S" },
    -- softmax(x * scale) is computed as 2^(x * scale * log2 e); scale = 1 / sqrt(D)
    { "scale_log2", scalar = "f32", value = function(p) return 1.4426950408889634 / math.sqrt(p.D) end },
    -- tensor maps of q, k, v for the TMA producer: 4-D {D, S, heads, B} (the shapes reversed, the
    -- default), box {64 columns (128 bytes, the swizzle span), tile rows, 1, 1}, 128-byte swizzle,
    -- rows past S read as zeros. Variants without USE_TMA get maps too (every kernel takes them),
    -- with the rows clipped to S so that they always build.
    { "tmQ", tensormap = { tensor = "q", swizzle = 128,
      box = function(p, c) return { 64, tma_rows(c, p, 64 * c.CONSUMERS), 1, 1 } end } },
    { "tmK", tensormap = { tensor = "k", swizzle = 128,
      box = function(p, c) return { 64, tma_rows(c, p, c.BLOCK_N), 1, 1 } end } },
    { "tmV", tensormap = { tensor = "v", swizzle = 128,
      box = function(p, c) return { 64, tma_rows(c, p, c.BLOCK_N), 1, 1 } end } },
  },

  reference = {
    source = "templates/attention/reference_prefill.cuh",
    kernel = "attn_prefill_reference",
    grid = function(p) return { (p.S + 127) // 128, p.HQ, p.B } end,
    block = { 128, 1, 1 },
    shared = 0,
    defines = function(p) return { HEAD_DIM = p.D, IS_CAUSAL = p.causal, REF_TMA_ARGS = 1 } end,
  },

  -- as attention/prefill.lua: bf16 output, and P rounded to bf16 before P V, which tolerance.honest
  -- allows for
  tolerance = { rel_l2 = 2e-2, max_abs = 5e-2, honest = 2 },

  metrics = {
    -- two matmuls of 2*S*S*D flops per (b, h); causal does half
    flops = function(p)
      local f = 4 * p.B * p.HQ * p.S * p.S * p.D
      if p.causal then f = f // 2 end
      return f
    end,
    bytes = function(p) return 2 * p.S * p.D * (2 * p.B * p.HQ + 2 * p.B * p.HKV) end,
  },
}
