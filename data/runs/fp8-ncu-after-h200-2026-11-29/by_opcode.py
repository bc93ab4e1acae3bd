"""by_opcode.py DIR: ncu's per-SASS-instruction stall samples (DIR/src_<mode>.csv, `ncu --page source
--csv --print-source sass`) summed per opcode for each scale mode."""
import collections
import csv
import sys

REASONS = ["stall_dispatch", "stall_long_sb", "stall_short_sb", "stall_wait", "stall_barrier"]
for mode in ["block", "row", "tensor"]:
    rows = list(csv.reader(open(f"{sys.argv[1]}/src_{mode}.csv")))
    hdr, data = rows[1], rows[2:]
    ix = {h: i for i, h in enumerate(hdr)}
    agg = collections.defaultdict(collections.Counter)
    for r in data:
        words = r[ix["Source"]].strip().split()
        if not words:
            continue
        op = (words[1] if words[0].startswith("@") else words[0]).split(".")[0]
        agg[op]["all"] += int(r[ix["Warp Stall Sampling (All Samples)"]] or 0)
        for h in REASONS:
            agg[op][h[6:]] += int(r[ix[h]] or 0)
    print(f"== {mode}: {sum(c['all'] for c in agg.values())} samples")
    for op, c in sorted(agg.items(), key=lambda x: -x[1]["all"])[:10]:
        print(f"  {op:10s} all {c['all']:6d} " + " ".join(f"{h[6:]} {c[h[6:]]:5d}" for h in REASONS))
