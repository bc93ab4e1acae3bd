-- softmax/stream_tail.lua: recipe softmax.stream_tail, a correctness check of softmax.stream
-- (recipes/softmax/stream.lua, same space and kernel) on row counts its timed problems never have:
-- a last group of fewer than SROWS rows (999 = 31 x 32 + 7, odd for MODE 2's groups of 2 rows; 251
-- rows in groups of 2) and fewer groups than blocks or streams (100 rows on 132 SMs: one row per
-- block, a ring deeper than the work; MODE 2 with ~500 groups for 1056 warps). Run by tools/bench/device_softmax_new.sh's smoke test; not a benchmark (2-6 MiB problems).
local stream = require "softmax.stream"

local tail = {}
for k, v in pairs(stream) do tail[k] = v end
tail.name = "softmax.stream_tail"
tail.problems = {
  { name = "r999c1024",  rows = 999,  cols = 1024 },
  { name = "r251c8192",  rows = 251,  cols = 8192 },
  { name = "r100c32768", rows = 100,  cols = 32768 },
}
return tail
