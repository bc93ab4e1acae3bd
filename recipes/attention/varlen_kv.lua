-- attention/varlen_kv.lua: attention forward over packed variable-length sequences whose keys are
-- longer than their queries: a long prompt prefilled in chunks, or a prompt continuing a cached
-- prefix (vLLM's chunked prefill, SGLang's extend). The Hopper path: templates/attention/
-- prefill_sm90.cuh with VARLEN = 1 and VARLEN_KV = 1 (entry attn_varlen_kv_sm90, the mainloop of
-- attention.varlen with per-sequence key counts and a causal shift). sm_90a only.
--
-- The serving contract (flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, causal=True)):
--   q [TQ, HQ, D] and o [TQ, HQ, D] bf16, TQ query tokens of B sequences packed back to back;
--   k and v [TK, HKV, D], TK key tokens packed the same way; cu_seqlens_q i32 [B + 1] (sequence b's
--   queries are tokens [cu_seqlens_q[b], cu_seqlens_q[b + 1])) and cu_prefix i32 [B + 1], the prefix
--   sums of the per-sequence cached-prefix lengths Lk - Lq >= 0: cu_prefix = cu_seqlens_k -
--   cu_seqlens_q, so sequence b's keys are tokens [cu_seqlens_q[b] + cu_prefix[b], cu_seqlens_q[b + 1]
--   + cu_prefix[b + 1]) (SGLang keeps these lengths as extend_prefix_lens; tunert.torch.
--   attention_varlen computes cu_prefix from cu_seqlens_k on the device, no host sync). The kernel
--   takes the prefix form because it is what the offsets init can draw with Lk >= Lq for every
--   sequence (two independent offsets draws would give some sequences fewer keys than queries).
--   Causal aligned at the end: query j of a sequence sees keys 0 .. j + Lk - Lq (FlashAttention-2's
--   and torch's causal_lower_right). GQA, D 64 or 128, any Lq >= 1, any prefix >= 0 (Lq = Lk is
--   attention.varlen's case), row strides q_ld, k_ld, v_ld, o_ld as attention.varlen.
--   The grid depends on TQ, B and the heads only (TILES over the query tokens, as attention.varlen):
--   one CUDA graph replays a prefill step while the chunk and prefix lengths change.
--   USE_TMA = 1: the Q map spans {D, HQ, TQ, 1}, the K and V maps {D, HKV, TK, 1}.
-- Tuned: as attention.varlen (tiles, pipeline, tile order, GQA_PACK). A query tile now walks its
-- sequence's whole prefix, so the work per tile is mostly the prefix: the causal tile orders matter
-- less than in attention.varlen, and long prefixes favour the deeper K/V rings.
-- Problems draw the query lengths with {"offsets", "TQ", QMIN} (QMIN = max(1, TQ // (2 B)): chunks
-- between half the mean and a few times it) and the prefixes with {"offsets", "TK - TQ", 0} (skewed:
-- some long, some short, and where TK - TQ is small against B some 0, i.e. Lq = Lk).

local common = require "attention.shared.varlen"
-- Dynamic shared memory (prefill_sm90.cuh kSmemBytes, VARLEN_KV): varlen.lua's with 32 bytes of work.
local SMEM = common.smem(32)
-- The shortest query chunk the problems draw (the offsets init's min_part).
local QMIN = "max(1, TQ // (2 * B))"

local function problem(B, TQ, TK, HQ, HKV, D, causal)
  return { name = string.format("b%dq%dk%dhq%dkv%dd%d%s", B, TQ, TK, HQ, HKV, D, causal and "c" or ""),
           B = B, TQ = TQ, TK = TK, HQ = HQ, HKV = HKV, D = D, causal = causal }
end

return {
  name = "attention.varlen_kv",
  template = "templates/attention/prefill_sm90.cuh",
  kernel = "attn_varlen_kv_sm90",

  -- attention.varlen's space and constraints (the same mainloop and register budgets)
  params = common.params(),
  constraints = common.constraints(),

  -- What a config needs to run a problem (shared/varlen.lua); a TMA box is no larger than its
  -- tensor: Q rows of TQ, K and V rows of TK.
  requires = common.requires("USE_TMA == 0 or (TQ >= 64 * CONSUMERS and TK >= BLOCK_N)", SMEM),

  defines = common.defines({ VARLEN_KV = 1 }),

  -- The problems the family serves: every sequence has at least as many keys as queries in total,
  -- the grid's blocks and token indices fit int32, heads fit grid.y.
  domain = common.domain({ "B >= 1 and TQ >= B and TK >= TQ and TK <= 2147483647",
                            "(TQ // 64 + B) * HQ <= 2147483647" }),
  -- The generic variant: attention.varlen's (cp.async producer, no packing).
  fallback = common.fallback(),

  problems = {
    problem(4, 4096, 69632, 32, 8, 128, true),   -- chunks of 512..2560 queries over prefixes up to ~30k
    problem(8, 8192, 73728, 32, 8, 128, true),   -- more sequences, prefixes of ~8k on average
    problem(2, 2048, 65536, 32, 8, 128, true),   -- two chunks continuing ~31k-token cached prefixes
    problem(4, 2048, 18432, 16, 16, 64, true),   -- D 64, no GQA
    problem(16, 200, 520, 32, 8, 128, true),     -- tails: short uneven chunks, some with no prefix (Lq = Lk)
    problem(32, 32, 16416, 32, 8, 128, true),    -- Lq = 1 for every sequence (decode-like) over ~512 keys
    problem(8, 600, 2600, 8, 8, 128, false),     -- not causal (every query sees its sequence's keys)
  },

  launch = common.launch("TQ", SMEM),

  args = common.args("TQ", "TK", {
    { "cu_seqlens_q", tensor = "i32", shape = { "B + 1" }, init = { "offsets", "TQ", QMIN } },
    { "cu_prefix", tensor = "i32", shape = { "B + 1" }, init = { "offsets", "TK - TQ", 0 } },
  },
  -- second set: q, k of std 5 give logits of std 25 (one dominant key): exp overflows unless the max is subtracted
  { q = { "normal", 0, 5 }, k = { "normal", 0, 5 } }),

  reference = common.reference("attn_varlen_kv_reference", "TQ",
    function(p) return { HEAD_DIM = p.D, IS_CAUSAL = p.causal, REF_TMA_ARGS = 1, VARLEN_KV = 1 } end),

  -- As attention.varlen (shared/varlen.lua): longer key ranges average more values, which shrinks
  -- |o| (so max_abs only gets easier) and leaves the relative error of the bf16 steps where it was.
  tolerance = common.tolerance(),

  metrics = {
    -- The lengths are drawn per run, so flops use their expectation under the two offsets draws
    -- (tuner/inputs.c; varlen.lua's derivation): the query length is QMIN + s w, s = TQ - B QMIN,
    -- w the u^3 weights (E[sum w^2] ~ 16 / (7 B)), independent of the prefix, whose mean is
    -- (TK - TQ) / B. Key-query pairs: sum Lq P + sum Lq^2 (causal: half of the latter). Two matmuls
    -- of 2 D flops per pair and query head.
    flops = "4 * HQ * D * (TQ * (TK - TQ) / B + (causal and 0.5 or 1) * (B * " .. QMIN .. " ^ 2 + 2 * "
            .. QMIN .. " * (TQ - B * " .. QMIN .. ") + 16 * (TQ - B * " .. QMIN .. ") ^ 2 / (7 * B)))",
    -- q and o at TQ tokens, k and v at TK, each read or written once
    bytes = "2 * D * (2 * TQ * HQ + 2 * TK * HKV)",
  },
}
