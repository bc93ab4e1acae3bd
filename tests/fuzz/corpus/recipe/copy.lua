-- copy.lua: device-to-device copy, the memory-bound yardstick.
-- Every knob of templates/copy/copy.cuh is a parameter here.
return {
  name = "copy",
  template = "templates/copy/copy.cuh",
  kernel = "copy_kernel",            -- extern "C" entry in the template

  -- Each parameter reaches the template as a -D define (bools as 0/1).
  -- Ordered list form: the order is the enumeration order.
  params = {
    { "VEC_BYTES",   { 4, 8, 16 } },       -- bytes per load/store per thread
    { "ILP",         { 1, 2, 4, 8 } },     -- independent vectors in flight per thread
    { "BLOCK",       { 128, 256, 512, 1024 } },
    { "GRID_STRIDE", { false, true } },    -- persistent grid-stride loop vs one-shot grid
    { "MIN_BLOCKS",  { 1, 2 } },           -- __launch_bounds__ minimum blocks per SM
  },

  -- Functions see the config (partial while enumerating) and are checked as
  -- soon as the parameters they read are bound; strings are Lua expressions.
  constraints = {
    "BLOCK * MIN_BLOCKS <= 2048",          -- at most 2048 resident threads per SM
    function(c) return c.BLOCK * c.ILP * c.VEC_BYTES <= 64 * 1024 end, -- bytes per block-step
  },

  problems = {
    { name = "64MiB",  N = 16 * 1024 * 1024 },   -- floats: 64 MiB read + 64 MiB written
    { name = "256MiB", N = 64 * 1024 * 1024 },   -- 256 MiB read + 256 MiB written
  },

  -- c: config, p: problem, d: device ({sm_count=..., smem_per_block=..., arch=...})
  launch = {
    grid = function(c, p, d)
      local per_block = c.BLOCK * c.ILP * (c.VEC_BYTES // 4)
      local blocks = (p.N + per_block - 1) // per_block
      if c.GRID_STRIDE then blocks = math.min(blocks, d.sm_count * (2048 // c.BLOCK)) end
      return { blocks, 1, 1 }
    end,
    block = function(c) return { c.BLOCK, 1, 1 } end,
    shared = 0,
  },

  -- Kernel parameters, in order (packed with natural alignment).
  args = {
    { "src", tensor = "f32", shape = { "N" }, init = { "uniform", -1, 1 } },
    { "dst", tensor = "f32", shape = { "N" }, output = true },
    { "n",   scalar = "i64", value = "N" },
  },

  reference = {
    source = "templates/copy/reference.cuh",
    kernel = "copy_reference",
    grid = function(p) return { (p.N + 255) // 256, 1, 1 } end,
    block = { 256, 1, 1 },
  },

  tolerance = { rel_l2 = 0, max_abs = 0 },   -- a copy is exact

  metrics = {
    bytes = function(p) return 2 * 4 * p.N end,
    flops = 0,
  },
}
