-- moe/combine.lua: the weighted un-permutation that ends a Mixture-of-Experts layer,
-- templates/moe/combine.cuh:
--   out[t, :] = bf16( sum_{j < top_k} weights[t, j] * y[pos[t * top_k + j], :] )
-- y [T * top_k, H] bf16: the down projection's rows in expert order; pos i32 [T * top_k]: the row of
-- y holding token t's slot j (the inverse of the expert sort: pos[order] = arange); weights f32
-- [T, top_k]: the routing weights. fp32 products and sums, one rounding. In PyTorch this is a
-- scatter into token order, an fp32 copy of all T * top_k rows, a multiply and a sum (tunert.torch's
-- moe_layer_torch); here every y row is read once and every output row written once.
-- Memory-bound: GB/s of those bytes, against the copy recipe's bandwidth on the same device.
--
-- Problems: real layers' (H, top_k) from decode (one token) to prefill (4096 tokens), token counts
-- no power of two among them:
--   Mixtral-8x7B: H 4096, top-2
--   Qwen3-235B-A22B: H 4096, top-8
--   DeepSeek-V3: H 7168, top-8
-- Inputs: y ~ N(0, 1), pos a random permutation (the gather of a real routing: each token's rows in
-- different experts' segments), weights uniform in (0, 1). Second input set (adversarial): y and
-- weights spread over many binades ({"wide"}), where a bf16 (or fp16) accumulation or bf16 weights
-- lose the small terms and the honest tolerance catches a second rounding.

local function cdiv(a, b) return string.format("((%s + %s - 1) // %s)", a, b, b) end
-- hidden elements one block covers per token (combine.cuh kSlice)
local SLICE = "((BLOCK // TOKENS) * VECS * (VEC_BYTES // 2))"

local function problem(model, T, H, top_k)
  return { name = string.format("%s_t%dh%dk%d", model, T, H, top_k), T = T, H = H, top_k = top_k }
end

local function problems()
  local t = {}
  for _, T in ipairs({ 1, 16, 256, 4096 }) do t[#t + 1] = problem("mixtral", T, 4096, 2) end
  for _, T in ipairs({ 1, 16, 100, 1000, 4096 }) do t[#t + 1] = problem("qwen3", T, 4096, 8) end
  for _, T in ipairs({ 1, 64, 777, 4096 }) do t[#t + 1] = problem("dsv3", T, 7168, 8) end
  return t
end

return {
  name = "moe.combine",
  template = "templates/moe/combine.cuh",
  kernel = "moe_combine",

  params = {
    { "VEC_BYTES", { 16, 8 } },            -- bytes per load / store (8 or 4 bf16)
    { "BLOCK",     { 128, 256, 64, 512 } }, -- threads per block
    { "TOKENS",    { 1, 2 } },              -- tokens per block
    { "VECS",      { 2, 1, 4 } },           -- vectors per thread of the hidden slice
    { "LOADS",     { 4, 2, 8 } },           -- slots gathered before any is summed
  },

  constraints = {
    "BLOCK // TOKENS >= 32",  -- a token's threads are whole warps
    -- registers: the gathered vectors (LOADS * VECS, raw words), the fp32 accumulators and ~56 of
    -- addresses, weights and state, under the launch-bounds cap (more spills)
    "LOADS * VECS * VEC_BYTES // 4 + VECS * VEC_BYTES // 2 + 56 <= min(255, 65536 // BLOCK)",
  },

  -- whole vectors: the domain's H % 8 == 0 gives it for every variant
  requires = { "H % (VEC_BYTES // 2) == 0" },

  -- search-space pruning for the tuned problems (`requires` decides where a variant runs)
  applies = function(c, p)
    if c.LOADS > 2 and c.LOADS > p.top_k then
      return false, "more slots in flight than top_k"
    end
    local slice = (c.BLOCK // c.TOKENS) * c.VECS * (c.VEC_BYTES // 2)
    if slice >= 2 * p.H then return false, "a hidden slice of twice H or more: half the threads idle" end
    return true
  end,

  problems = problems(),

  domain = { "T >= 1", "top_k >= 1 and top_k <= 64", "H >= 8 and H % 8 == 0 and H <= 1048576" },
  -- 128 threads of 16-byte vectors, two each: any T, top_k and H of the domain
  fallback = { VEC_BYTES = 16, BLOCK = 128, TOKENS = 1, VECS = 2, LOADS = 4 },

  launch = {
    grid = { cdiv("T", "TOKENS"), cdiv("H", SLICE), 1 },
    block = { "BLOCK", 1, 1 },
    shared = 0,
  },

  args = {
    { "y",       tensor = "bf16", shape = { "T * top_k", "H" }, init = { "normal", 0, 1 },
      adversarial = { "wide", -20, 4 } },
    { "pos",     tensor = "i32",  shape = { "T * top_k" }, init = { "permutation" } },
    { "weights", tensor = "f32",  shape = { "T", "top_k" }, init = { "uniform", 0, 1 },
      adversarial = { "wide", -16, 0 } },
    { "out",     tensor = "bf16", shape = { "T", "H" }, output = true },
    { "T",       scalar = "i32",  value = "T" },
    { "H",       scalar = "i32",  value = "H" },
    { "top_k",   scalar = "i32",  value = "top_k" },
  },

  reference = {
    source = "templates/moe/combine_reference.cuh",
    kernel = "moe_combine_reference",
    grid = { "T", "(H + 255) // 256", 1 },
    block = { 256, 1, 1 },
  },

  -- The reference sums exact products in fp64 and rounds once; a variant sums fp32 products (a
  -- relative error of a few fp32 ulps) and rounds once: the two differ by one bf16 ulp where the
  -- sum lies near a rounding boundary. |out| stays under 128 on both input sets (|y| < 16 and
  -- |w| <= 1 over at most 8 slots; N(0, 1) values rarely pass 5), where an ulp is at most 0.5.
  -- honest: bf16 partial sums or bf16 weights cost more than one rounding of the output.
  tolerance = { rel_l2 = 1e-2, max_abs = 1, honest = 1.25 },

  metrics = {
    -- y read, out written (bf16), pos and weights read (4 bytes each)
    bytes = "2 * T * top_k * H + 2 * T * H + 8 * T * top_k",
    flops = "2 * T * top_k * H",
  },
}
