import sys
import csv, collections
for t in ["block", "tensor"]:
    rows = list(csv.reader(open(f"{sys.argv[1]}/src_{t}.csv"))); hdr = rows[1]; data = rows[2:]
    ix = {h: i for i, h in enumerate(hdr)}
    agg = collections.defaultdict(lambda: collections.Counter())
    for r in data:
        op = r[ix["Source"]].strip().split()
        if not op: continue
        o = op[0] if not op[0].startswith("@") else op[1]
        o = o.split(".")[0]
        c = agg[o]
        c["all"] += int(r[ix["Warp Stall Sampling (All Samples)"]] or 0)
        c["exec"] += int(r[ix["Instructions Executed"]] or 0)
        for h in ["stall_dispatch", "stall_long_sb", "stall_wait", "stall_selected", "stall_math", "stall_not_selected"]:
            c[h[6:]] += int(r[ix[h]] or 0)
    print("==", t)
    for o, c in sorted(agg.items(), key=lambda x: -x[1]["all"])[:18]:
        print(f"  {o:10s} all {c['all']:6d} exec {c['exec']:9d} dispatch {c['dispatch']:5d} long_sb {c['long_sb']:5d} wait {c['wait']:5d} sel {c['selected']:5d} math {c['math']:4d}")
    print("  total exec", sum(c["exec"] for c in agg.values()))
