-- temporary experiment (not committed): BLOCK_ORDER 1 vs 2, mixed vs equal lengths
local r = require "attention.decode"
for _, p in ipairs(r.params) do if p[1] == "BLOCK_ORDER" then p[2] = { 1, 2 } end end
local P = r.problems
local probs = {}
for _, p in ipairs(P) do
  local q = {}; for k, v in pairs(p) do q[k] = v end; q.EQ = 0; probs[#probs + 1] = q
  if p.B > 1 then
    local e = {}; for k, v in pairs(p) do e[k] = v end
    e.EQ = 1; e.name = p.name .. "eq"; probs[#probs + 1] = e
  end
end
r.problems = probs
for _, a in ipairs(r.args) do
  if a[1] == "seq_lens" then
    a.init = { "randint", "EQ == 1 and (max_pages * page_size + 1) // 2 or (B == 1 and max_pages * page_size or 1)",
               "EQ == 1 and (max_pages * page_size + 1) // 2 or max_pages * page_size" }
  end
end
return r
