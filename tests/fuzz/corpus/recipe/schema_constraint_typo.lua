-- schema_constraint_typo.lua: prune.lua with its constraint under a misspelt field name
-- (tests/integration/recipe_typos_test.sh): an error naming the field and "constraints", never a
-- recipe whose constraint silently stops applying.
local r = {}
for k, v in pairs(require "prune") do r[k] = v end
r.name = "schema_constraint_typo"
r.constraint = { "SMEM_KB < 250" }
return r
