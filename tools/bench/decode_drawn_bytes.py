#!/usr/bin/env python3
"""decode_drawn_bytes.py RECORDING.db: each paged-decode problem's fastest result in GB/s of the K/V
bytes its drawn lengths make it read, as a share of the copy bandwidth measured in the same run.

The recipes' `bytes` metric (what `tune run` prints as GB/s) counts the expected length of the
uniform draw, (1 + max) / 2 or (min_len + max) / 2; the worker draws the lengths from the run's seed
(tuner/inputs.c), and the kernels read what was drawn. A batch of a few sequences can draw a mean
far from the expected one, and the metric's GB/s is then off by as much. This reproduces the draw
(tools/peers: worker_inputs, bit for bit with the C code) from the seed stored with each result and
counts K and V of the drawn lengths plus q and o, as the peers' SDPA reads them.

attention.decode and attention.decode_tma (bf16 cache, 2 bytes per element) and
attention.decode_fp8 and attention.decode_fp8_tma (e4m3, 1 byte; the scales are not counted) are
understood; other recipes in the file are skipped.
"""
import json
import os
import sqlite3
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "peers"))
import peer_family_kvfp8  # noqa: E402  (tools/peers, no torch at import)
import peer_server  # noqa: E402

# recipe -> (bytes per K/V element, the worker's lengths for (dims, seed), the metric's mean length)
RECIPES = {
    "attention.decode": (2, peer_server.decode_lengths, peer_server.decode_mean_len),
    "attention.decode_tma": (2, peer_server.decode_lengths, peer_server.decode_mean_len),
    "attention.decode_fp8": (1, peer_family_kvfp8.lengths,
                             lambda d: (d["min_len"] + d["max_pages"] * d["page_size"]) / 2),
}
RECIPES["attention.decode_fp8_tma"] = RECIPES["attention.decode_fp8"]

# tune's own variants only: `tune compare` stores each peer's median as a result too (its config's
# origin is peer:<name>)
QUERY = """select p.recipe_name, p.name, p.dims_json, r.median_ns, r.seed
           from results r join problems p on p.id = r.problem_id join configs c on c.id = r.config_id
           where r.status = 'ok' and coalesce(c.origin, '') not like 'peer:%'
             and r.median_ns = (select min(r2.median_ns) from results r2 join configs c2 on c2.id = r2.config_id
               where r2.problem_id = r.problem_id and r2.status = 'ok' and coalesce(c2.origin, '') not like 'peer:%')
           group by p.id order by p.recipe_name, p.id"""


def drawn_bytes(elem_bytes, d, lens):
    """K and V rows of every drawn length, q read and o written (bf16)."""
    return 2 * sum(lens) * d["HKV"] * d["D"] * elem_bytes + 2 * d["B"] * d["HQ"] * d["D"] * 2


def rows(path):
    """(recipe, problem, best us, drawn mean / metric mean, GB/s of the drawn bytes, copy GB/s or None)."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    copy = con.execute("select max(value) from peaks where kind = 'copy_GBps'").fetchone()[0]
    out = []
    for recipe, problem, dims, ns, seed in con.execute(QUERY):
        if recipe not in RECIPES:
            continue
        elem, lengths, mean_len = RECIPES[recipe]
        d = json.loads(dims)
        lens = lengths(d, seed)
        gbs = drawn_bytes(elem, d, lens) / ns
        out.append((recipe, problem, ns / 1e3, sum(lens) / len(lens) / mean_len(d), gbs, copy))
    con.close()
    return out


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    found = rows(argv[1])
    if not found:
        print(f"{argv[1]}: no ok result of a decode recipe", file=sys.stderr)
        return 1
    print("| recipe | problem | best [us] | drawn mean / metric's mean | GB/s (drawn) | % of copy |")
    print("| --- | --- | --- | --- | --- | --- |")
    for recipe, problem, us, ratio, gbs, copy in found:
        share = f"{100 * gbs / copy:.1f}" if copy else "-"
        print(f"| {recipe} | {problem} | {us:.2f} | {ratio:.3f} | {gbs:.1f} | {share} |")
    if found[0][5]:
        print(f"\ncopy: {found[0][5]:.0f} GB/s (1 GiB device copy, read+write: the highest the database measured)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
