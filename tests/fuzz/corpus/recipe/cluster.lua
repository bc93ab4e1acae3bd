-- cluster.lua: thread-block cluster launches (docs/recipes.md, launch field `cluster`), for
-- tests/unit/cluster_test.c, tests/integration/cluster_bundle_test.sh and tests/gpu/cluster_gpu_test.sh.
-- Each CTA of a 1-D cluster of CL blocks (along x) stores its blockIdx.x in shared memory and reads the
-- value of the CTA of cluster rank (rank ^ 1) through distributed shared memory (mapa +
-- ld.shared::cluster, between barrier.cluster arrive/wait): out[y][x] = x ^ 1 when the launch had the
-- cluster the recipe asked for (%cluster_nctarank == CL and rank == x % CL), else -1 - nctarank.
-- Problem nb6 has 6 blocks per row: CL = 4 does not divide it (that variant is skipped, with the reason).
return {
  name = "cluster",
  template = "templates/cluster/cluster_peer.cuh",
  kernel = "cluster_peer",
  params = { { "CL", { 2, 4 } }, { "THREADS", { 32, 64 } } },
  problems = { { name = "nb64r2", NB = 64, ROWS = 2 }, { name = "nb6r1", NB = 6, ROWS = 1 } },
  launch = {
    grid = { "NB", "ROWS", 1 },
    block = { "THREADS", 1, 1 },
    cluster = { "CL", 1, 1 },
  },
  args = {
    { "out", tensor = "i32", shape = { "ROWS", "NB" }, output = true },
    { "nb", scalar = "i32", value = "NB" },
    { "rows", scalar = "i32", value = "ROWS" },
  },
  reference = {
    source = "templates/cluster/reference.cuh",
    kernel = "cluster_peer_reference",
    grid = function(p) return { (p.NB * p.ROWS + 255) // 256, 1, 1 } end,
    block = { 256, 1, 1 },
  },
  tolerance = { rel_l2 = 0, max_abs = 0 },
  metrics = { bytes = function(p) return 4 * p.NB * p.ROWS end },
}
