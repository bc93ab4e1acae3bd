-- gemm/f16.lua: recipes gemm.f16, gemm.f16.splitk and gemm.f16.gemv_rows: GEMM with fp16 a and b,
-- fp32 accumulation, bf16 output (the issue's "bf16 and fp16 in"), through templates/gemm/f16.cuh and
-- gemv_rows_f16.cuh: recipes/gemm.lua's three recipes with all their paths and knobs (mma.sync,
-- wgmma with its tiles, rings, warp roles, setmaxnreg, TMA, persistence, tile order; the CUDA-core
-- GEMVs; split-K with partials or a cluster), the same constraints, shape rules and tolerance.
-- Recorded on its own (data/recorded/gemm.f16.db) so that gemm.lua's recording keeps its source hash;
-- the recipes are derived from gemm.lua's tables (require), so a change there reaches these too.

local base = require "gemm"  -- { gemm, gemm.splitk, gemm.gemv_rows }

local LARGE = {
  { 8192, 8192, 8192, "col" }, { 4096, 4096, 4096, "row" }, { 4096, 4096, 4096, "col" },
  { 4096, 14336, 4096, "col" },
}
local DECODE = {
  { 1, 8192, 8192, "row" }, { 1, 8192, 8192, "col" }, { 1, 14336, 4096, "col" }, { 1, 4096, 14336, "col" },
  { 16, 8192, 8192, "col" }, { 16, 14336, 4096, "col" }, { 16, 4096, 14336, "col" },
  { 64, 8192, 8192, "col" }, { 64, 14336, 4096, "col" }, { 64, 4096, 14336, "col" },
  { 128, 8192, 8192, "row" }, { 128, 8192, 8192, "col" }, { 128, 14336, 4096, "col" },
  { 128, 4096, 14336, "col" },
}
-- shapes that are no tile's multiple (N, K multiples of 8), as gemm.lua's tail problems
local TAILS = { { 1000, 1000, 1000, "col" }, { 37, 4104, 4096, "row" }, { 5, 4104, 1056, "col" }, { 5, 4104, 1056, "row" } }

local function problems(list)
  local t = {}
  for _, s in ipairs(list) do
    t[#t + 1] = { name = string.format("m%dn%dk%d_%s", s[1], s[2], s[3], s[4]), M = s[1], N = s[2], K = s[3], b_layout = s[4] }
  end
  return t
end

local function copy(t)
  local c = {}
  for k, v in pairs(t) do c[k] = v end
  return c
end

-- a and b as f16 tensors (their tensor maps follow the tensors' type); everything else as gemm.lua
local function f16_args(args)
  local t = {}
  for i, a in ipairs(args) do
    if a[1] == "a" or a[1] == "b" then
      t[i] = copy(a)
      t[i].tensor = "f16"
    else
      t[i] = a
    end
  end
  return t
end

local function derive(r, name, probs, template)
  local d = copy(r)
  d.name = name
  d.template = template or "templates/gemm/f16.cuh"
  d.problems = problems(probs)
  d.args = f16_args(r.args)
  d.reference = copy(r.reference)
  d.reference.source = "templates/gemm/reference_f16.cuh"
  if d.kernel == "gemm_bf16" then d.kernel = "gemm_f16" end
  if d.kernel == "gemv_rows" then d.kernel = "gemv_rows_f16" end
  if type(r.launch[1]) == "table" then  -- split-K: the GEMM, then the reduce kernel
    d.launch = {}
    for i, l in ipairs(r.launch) do
      d.launch[i] = copy(l)
      if l.kernel == "gemm_bf16" then d.launch[i].kernel = "gemm_f16" end
    end
  end
  return d
end

local rows = {}  -- gemm.gemv_rows: row-major b, M <= 8
local decode = {}  -- gemm.splitk: M <= 128
for _, list in ipairs({ DECODE, TAILS }) do
  for _, p in ipairs(list) do
    if p[1] <= 8 and p[4] == "row" then rows[#rows + 1] = p end
    if p[1] <= 128 then decode[#decode + 1] = p end
  end
end

local all = {}
for _, list in ipairs({ LARGE, DECODE, TAILS }) do
  for _, p in ipairs(list) do all[#all + 1] = p end
end

return {
  derive(base[1], "gemm.f16", all),
  derive(base[2], "gemm.f16.splitk", decode),
  derive(base[3], "gemm.f16.gemv_rows", rows, "templates/gemm/gemv_rows_f16.cuh"),
}
