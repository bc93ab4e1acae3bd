-- tensormap.lua: tensor-map args and zeroed scratch in the worker (tests/gpu/tensormap_gpu_test.sh,
-- tests/integration/tensormap_args_test.sh; docs/tensormap-args.md).
-- Each block copies a BOX_R x 64 tile of src to dst through one bulk tensor copy (TMA) with the map
-- tm0 (no swizzle) or tm128 (128-byte swizzle, undone on the way out), rows past R read as zeros
-- and are not stored. Every block also adds its element count to the zeroed scratch `acc`; the block
-- that completes R * C writes it to `count`, which only happens when acc started at zero.
return {
  name = "tensormap",
  template = "templates/tensormap/tmap_copy.cuh",
  kernel = "tmap_copy",
  params = { { "SWZ", { 0, 128 } }, { "BOX_R", { 8, 32 } } },
  problems = { { name = "r512c384", R = 512, C = 384 }, { name = "r500c384", R = 500, C = 384 } },
  launch = {
    grid = function(c, p) return { p.C // 64, (p.R + c.BOX_R - 1) // c.BOX_R, 1 } end,
    block = { 128, 1, 1 },
  },
  args = {
    { "src", tensor = "bf16", shape = { "R", "C" }, init = { "normal", 0, 1 } },
    { "dst", tensor = "bf16", shape = { "R", "C" }, output = true },
    { "acc", tensor = "i32", shape = { 1 }, scratch = true, zero = true },
    { "count", tensor = "i32", shape = { 1 }, output = true },
    { "R", scalar = "i32", value = "R" },
    { "C", scalar = "i32", value = "C" },
    { "tm0", tensormap = { tensor = "src", box = function(p, c) return { 64, c.BOX_R } end } },
    { "tm128", tensormap = { tensor = "src", box = { 64, "BOX_R" }, swizzle = 128, l2_promotion = 128 } },
  },
  reference = {
    source = "templates/tensormap/reference.cuh",
    kernel = "tmap_copy_reference",
    grid = function(p) return { (p.R * p.C + 255) // 256, 1, 1 } end,
    block = { 256, 1, 1 },
  },
  tolerance = { rel_l2 = 0, max_abs = 0 },
  metrics = { bytes = function(p) return 4 * p.R * p.C end },
}
