#!/usr/bin/env python3
"""merge.py COLD WARM OUT: one tune-bench-search JSON with both strategies (bayes:cold from COLD, bayes
from WARM), as one run with --strategies bayes:cold,bayes writes it; every other field must agree."""
import json, sys
cold, warm = (json.load(open(f)) for f in sys.argv[1:3])
assert [(p["recipe"], p["problem"]) for p in cold] == [(p["recipe"], p["problem"]) for p in warm]
out = []
for c, w in zip(cold, warm):
    for k in c:
        if k != "strategies":
            assert c[k] == w[k], (c["problem"], k)
    assert list(c["strategies"]) == ["bayes:cold"] and list(w["strategies"]) == ["bayes"]
    m = dict(c)
    m["strategies"] = {"bayes:cold": c["strategies"]["bayes:cold"], "bayes": w["strategies"]["bayes"]}
    out.append(m)
json.dump(out, open(sys.argv[3], "w"), indent=1)
print(len(out), "problems merged")
