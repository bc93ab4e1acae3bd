-- limit_loop_load.lua: a recipe that never finishes loading (tests/integration/recipe_limits_test.sh):
-- the instruction budget (tuner/lua_limits.h) must stop it with this file's line.
local n = 0
while true do n = n + 1 end
return require "prune"
