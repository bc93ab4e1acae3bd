-- gemm/shared/skinny.lua: the space rules of templates/gemm/skinny.cuh that gemm.skinny (bf16,
-- recipes/gemm/skinny.lua) and gemm.fp8_skinny (e4m3, recipes/gemm/fp8_skinny.lua) share: the rows
-- of a (BLOCK_M), the shared memory of a block, the ring depths worth trying and the pruning of ring
-- and grid. `elem` is the bytes of one a or b element (2 bf16, 1 e4m3); BLOCK_K counts elements.

local M = {}

M.SMEM_LIMIT = 227 * 1024
M.SMEM_PAIR = 113 * 1024  -- two blocks per SM (228 KiB per SM, 1 KiB reserved per block)
M.STAGES = { 4, 5, 6, 7, 8, 10, 12, 14, 16 }

function M.block_m(p) return 16 * ((p.M + 15) // 16) end

-- The same as expressions (libtunert evaluates them for untuned problems).
M.BM = "(16 * ((M + 15) // 16))"
function M.smem_expr(elem)
  return "1024 + max(STAGES * (" .. M.BM .. " + BLOCK_N) * BLOCK_K * " .. elem .. ", " .. M.BM
      .. " * (BLOCK_N + 4) * 4) + 16 * STAGES"
end

-- Dynamic shared memory (skinny.cuh kSmemBytes): alignment slack, ring (or the fp32 reduction tile,
-- whichever is larger), two mbarriers per slot.
function M.ring_bytes(c, p, elem) return c.STAGES * (M.block_m(p) + c.BLOCK_N) * c.BLOCK_K * elem end
function M.smem_bytes(c, p, elem)
  local red = M.block_m(p) * (c.BLOCK_N + 4) * 4
  return 1024 + math.max(M.ring_bytes(c, p, elem), red) + 16 * c.STAGES
end

-- The largest STAGES of the list whose block fits in `limit` bytes of shared memory (nil if none).
function M.deepest(c, p, elem, limit)
  local best
  for _, s in ipairs(M.STAGES) do
    if M.smem_bytes({ BLOCK_N = c.BLOCK_N, BLOCK_K = c.BLOCK_K, STAGES = s }, p, elem) <= limit then best = s end
  end
  return best
end

-- Ring and grid: the deepest ring for one block per SM (227 KiB) or two (113 KiB), at least 48 KiB
-- in flight, about one to four blocks per SM of 132. Returns false and the reason, or true.
function M.ring_and_grid(c, p, elem)
  if c.STAGES ~= M.deepest(c, p, elem, M.SMEM_LIMIT) and c.STAGES ~= M.deepest(c, p, elem, M.SMEM_PAIR) then
    return false, "not the deepest ring for one or two blocks per SM"
  end
  if M.ring_bytes(c, p, elem) < 48 * 1024 then return false, "ring under 48 KiB: too few bytes in flight" end
  local blocks = (p.N // c.BLOCK_N) * c.SPLIT_K
  if blocks < 112 then return false, "fewer than 112 blocks for 132 SMs" end
  if blocks > 4 * 132 then return false, "more than 4 blocks per SM" end
  return true
end

return M
