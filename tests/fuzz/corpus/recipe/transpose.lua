-- transpose.lua: out = in^T, [R, C] -> [C, R], templates/transpose/transpose.cuh, for fp32 and bf16.
-- Two recipes (the argument dtype is fixed per recipe): "transpose.f32" and "transpose.bf16", the
-- same template and the same parameters; the element size reaches the template as ELEM_BYTES.
-- Memory-bound: the figure of merit is GB/s of in read + out written, against the copy recipe's
-- bandwidth on the same device. A transpose moves bits: the comparison is exact.

local function recipe(dtype, elem_bytes, problems)
  return {
    name = "transpose." .. dtype,
    template = "templates/transpose/transpose.cuh",
    kernel = "transpose_kernel",

    params = {
      { "TILE",      { 32, 64 } },        -- tile edge, elements
      { "BANK",      { 0, 1, 2 } },       -- shared-memory layout: 0 none, 1 padding, 2 XOR swizzle
      { "THREADS",   { 128, 256, 512 } }, -- threads per tile; elements per thread = TILE^2 / THREADS
      { "VEC_BYTES", { 4, 8, 16 } },      -- bytes per global load/store
    },

    constraints = {
      -- every thread moves at least one vector per stage, and a pass covers whole tile rows
      function(c)
        local per_row = c.TILE * elem_bytes // c.VEC_BYTES       -- threads along one tile row
        return c.THREADS % per_row == 0 and c.THREADS // per_row <= c.TILE
      end,
    },

    applies = function(c, p)
      if p.R % c.TILE ~= 0 or p.C % c.TILE ~= 0 then return false, "R and C must be multiples of TILE" end
      if p.R // c.TILE > 65535 then return false, "R / TILE over the grid's y limit" end
      return true
    end,

    defines = function() return { ELEM_BYTES = elem_bytes } end,

    problems = problems,

    launch = {
      grid = function(c, p) return { p.C // c.TILE, p.R // c.TILE, 1 } end,
      block = function(c) return { c.THREADS, 1, 1 } end,
      shared = 0,   -- the tile is static shared memory (at most 64 * 66 * 4 = 16.5 KiB)
    },

    args = {
      { "in",  tensor = dtype, shape = { "R", "C" }, init = { "normal", 0, 1 } },
      { "out", tensor = dtype, shape = { "C", "R" }, output = true },
      { "R",   scalar = "i32", value = "R" },
      { "C",   scalar = "i32", value = "C" },
    },

    reference = {
      source = "templates/transpose/reference.cuh",
      kernel = "transpose_reference",
      grid = function(p) return { (p.C + 31) // 32, (p.R + 7) // 8, 1 } end,
      block = { 32, 8, 1 },
      defines = function() return { ELEM_BYTES = elem_bytes } end,
    },

    tolerance = { rel_l2 = 0, max_abs = 0 },   -- bits are moved, never rounded

    metrics = {
      bytes = function(p) return 2 * elem_bytes * p.R * p.C end,
      flops = 0,
    },
  }
end

return {
  recipe("f32", 4, {
    { name = "r8192c8192",   R = 8192,  C = 8192 },    -- 256 MiB each way
    { name = "r4096c14336",  R = 4096,  C = 14336 },   -- an MLP weight [4096, 14336], 224 MiB
  }),
  recipe("bf16", 2, {
    { name = "r16384c4096",  R = 16384, C = 4096 },    -- 16k tokens x hidden 4096, 128 MiB
    { name = "r14336c4096",  R = 14336, C = 4096 },    -- an MLP weight [14336, 4096], 112 MiB
  }),
}
