-- prune.lua: compile-time pruning (tests/integration/prune_test.sh). 64 threads per block and
-- SMEM_KB KiB of dynamic shared memory: 1 KiB reaches full occupancy on sm_90, 64 KiB fits 3
-- blocks per SM (occupancy 6/64 warps), 250 KiB cannot launch at all (227 KiB per block at most).
local N = 1 << 16
return {
  name = "prune",
  template = "templates/prune/prune.cuh",
  kernel = "prune_kernel",
  params = { { "SMEM_KB", { 1, 64, 250 } } },
  problems = { { name = "64K", N = N } },
  launch = {
    grid = function(c, p) return { p.N // 64, 1, 1 } end,
    block = { 64, 1, 1 },
    shared = function(c) return c.SMEM_KB * 1024 end,
  },
  args = {
    { "x", tensor = "f32", shape = { "N" }, init = { "uniform", -1, 1 } },
    { "y", tensor = "f32", shape = { "N" }, output = true },
    { "n", scalar = "i32", value = "N" },
  },
  reference = {
    source = "templates/prune/reference.cuh",
    kernel = "prune_reference",
    grid = function(p) return { p.N // 256, 1, 1 } end,
    block = { 256, 1, 1 },
  },
  tolerance = { rel_l2 = 0, max_abs = 0 },
}
