-- moe/shared/experts.lua: what the grouped GEMM recipes (moe/grouped.lua, moe/swiglu.lua,
-- moe/grouped_fp8.lua) share about templates/gemm/expert_tiles.cuh: the tile table's shared memory and
-- the upper bound of the output tiles, from the problem's dims only (one launch configuration, and
-- so one CUDA graph, serves every routing).

local M = {}

-- expert_tiles.cuh kTileTableBytes: tile0 [kMaxExperts + 1] and the scan's 8 warp sums, after the
-- kernel's own shared memory
M.TABLE_BYTES = (256 + 1 + 8) * 4

-- The output tiles of a layout ("contiguous" | "masked") with tiles_n tiles per row of tiles: the sum
-- over experts of ceil(rows_e / BLOCK_M) is at most T // BLOCK_M plus the experts with rows, of which
-- there are at most min(E, T) (contiguous), E * ceil(cap / BLOCK_M) (masked). Blocks past the real
-- count do nothing but still cost a launch and the table's build: a decode step routes a few rows to
-- a few of many experts, and a bound of T // BLOCK_M + E there would launch mostly such blocks.
function M.tiles(layout, tiles_n)
  if layout == "contiguous" then return "((T // BLOCK_M + min(E, T)) * " .. tiles_n .. ")" end
  return "(E * ((cap + BLOCK_M - 1) // BLOCK_M) * " .. tiles_n .. ")"
end

return M
