#!/usr/bin/env bash
# tune report: the page of a recorded comparison database and of a replayed run is well-formed
# XHTML with its four sections, one svg per figure, no script and nothing fetched, and its numbers
# are the database's (best medians, peaks, the ratios tune compare --report prints, selections).
. "$(dirname "$0")/lib.sh"
CMP="$SRC/data/compare/h100-2026-11-26-all/gemm.db"

"$TUNE" report --db "$CMP" -o page.html 2>err.txt
check "report of a comparison database exits 0" test $? -eq 0
check "it says where the page went" contains err.txt "wrote page.html"

# structure: well-formed, the sections in order, one svg per figure, self-contained
check "page: well-formed, sections, svgs, self-contained" python3 - page.html <<'PY'
import re, sys, xml.etree.ElementTree as ET
text = open(sys.argv[1], encoding="utf-8").read()
assert text.startswith("<!DOCTYPE html>")
root = ET.fromstring(text.replace("<!DOCTYPE html>", "", 1))
ns = {"h": "http://www.w3.org/1999/xhtml", "s": "http://www.w3.org/2000/svg"}
ids = [s.get("id") for s in root.iter("{%s}section" % ns["h"])]
assert ids == ["progress", "roofline", "peers", "selections"], ids
for sec in root.iter("{%s}section" % ns["h"]):
    svgs = list(sec.iter("{%s}svg" % ns["s"]))
    if sec.get("id") == "selections": assert not svgs and "none" in ET.tostring(sec, encoding="unicode")
    else: assert svgs, sec.get("id")
for fig in root.iter("{%s}figure" % ns["h"]):
    assert len(list(fig.findall("s:svg", ns))) >= 1
    if "chart" in fig.get("class", ""): assert len(fig.findall("s:svg", ns)) == 1
assert not list(root.iter("{%s}script" % ns["h"])), "no script"
urls = set(re.findall(r'(?:href|src)="([^"#][^"]*)"', text)) | set(re.findall(r"url\(", text))
assert not urls, urls
assert not re.search(r'<(?:link|img|iframe|object)\b', text)
PY

# the progress charts: one per (recipe, problem) with run results, each best the database's
check "progress: best per problem equals the database's" python3 - page.html "$CMP" <<'PY'
import re, sqlite3, sys
text = open(sys.argv[1], encoding="utf-8").read()
page = {(r, p): float(b) for r, p, b in re.findall(r'<figure class="chart" data-recipe="([^"]*)" data-problem="([^"]*)" data-best-ns="([^"]*)"', text)}
db = sqlite3.connect("file:" + sys.argv[2] + "?mode=ro&immutable=1", uri=True)
want = {(r, p): m for r, p, m in db.execute("""select rc.name, p.name, min(r.median_ns) from results r
    join recipes rc on rc.id = r.recipe_id join problems p on p.id = r.problem_id join configs c on c.id = r.config_id
    join devices d on d.id = r.device_id where r.run_id is not null and d.kind = 'gpu' and c.origin not like 'peer:%'
    and r.status = 'ok' group by 1, 2""")}
assert len(page) == len(want) and len(want) > 50, (len(page), len(want))
for k, v in want.items(): assert abs(page[k] - v) <= 0.06, (k, page[k], v)
PY

# the ceilings: the latest peak of every kind, as measured
check "roofline: the device's latest peaks" python3 - page.html "$CMP" <<'PY'
import re, sqlite3, sys
text = open(sys.argv[1], encoding="utf-8").read()
page = sorted(float(v) for v in re.findall(r'data-peak="([^"]*)"', text))
db = sqlite3.connect("file:" + sys.argv[2] + "?mode=ro&immutable=1", uri=True)
want = sorted(v for (v,) in db.execute("select value from peaks k where id = (select max(id) from peaks l where l.device_id = k.device_id and l.kind = k.kind)"))
assert len(page) == len(want) == 3 and all(abs(a - b) <= 1e-5 * b for a, b in zip(page, want)), (page, want)
PY
check "without --metrics the page says the database has no flops or bytes" contains page.html "records no flops or bytes per problem"

# the ratios: the same rows as tune compare --report's table, computed by the same functions
"$TUNE" compare --report last --db "$CMP" >table.md 2>&1
check "compare --report exits 0" test $? -eq 0
check "peers: every ratio and verdict equals tune compare --report's" python3 - page.html table.md <<'PY'
import re, sys
text = open(sys.argv[1], encoding="utf-8").read()
page = re.findall(r'<tr><td>([^<]*)</td><td>(burst|sustained)</td>.*?data-ratio="([^"]*)" data-lo="([^"]*)" data-hi="([^"]*)">.*?<td class="[a-z]+">([a-z]+)</td></tr>', text)
table = re.findall(r'^\| (\S+) \| (burst|sustained) \| [^|]* \| [^|]* \| [^|]* \| ([0-9.]+) \(([0-9.]+)-([0-9.]+), \d+ rounds\) \| ([a-z]+) \|', open(sys.argv[2]).read(), re.M)
assert table and sorted(page) == sorted(table), (len(page), len(table), sorted(set(page) ^ set(table))[:4])
assert {v for *_, v in page} <= {"faster", "slower", "parity"}
PY

# a replayed run (schema 7): no comparison says none; a selection shows; --metrics places copy's
# variants by their achieved bandwidth (bytes from the recipe, time from the database)
"$TUNE" run "$SRC/recipes/copy.lua" --device "replay:$SRC/data/recorded/copy.db" --db r.db --quiet >run.txt 2>&1
check "replay run exits 0" test $? -eq 0
python3 - r.db <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
rid, rec, prob, dev, run = db.execute("select id, recipe_id, problem_id, device_id, run_id from results where status = 'ok' order by median_ns limit 1").fetchone()
db.execute("""insert into selections (run_id, recipe_id, problem_id, device_id, timing, result_id, rule, why, candidates)
              values (?, ?, ?, ?, 'burst', ?, 'only', 'one candidate (test row)', '[]')""", (run, rec, prob, dev, rid))
db.commit()
PY
"$TUNE" report --db r.db -o r.html --metrics "$SRC/recipes/copy.lua" 2>err.txt
check "report of a replayed run exits 0" test $? -eq 0
check "no comparison: the peers section says none" contains r.html "none: the database holds no comparison"
check "the selection's rule and why are on the page" contains r.html "one candidate (test row)"
sel=$(sql r.db "select result_id from selections")
check "the selection names its result ($sel)" contains r.html "data-result=\"$sel\""
check "bandwidth: achieved GB/s = recipe bytes / database median" python3 - r.html r.db <<'PY'
import json, re, sqlite3, sys
text = open(sys.argv[1], encoding="utf-8").read()
assert "no variant is placed" not in text and "achieved bandwidth" in text
rows = re.findall(r'<tr><td>copy</td><td>([^<]*)</td><td class="num" data-median-ns="([^"]*)">[^<]*</td><td>burst</td><td class="num">-</td><td class="num">(\d+)</td>', text)
db = sqlite3.connect("file:" + sys.argv[2] + "?mode=ro", uri=True)
dims = {n: json.loads(d) for n, d in db.execute("select name, dims_json from problems")}
assert rows
for prob, ns, gbps in rows:
    assert int(gbps) == round(2 * 4 * dims[prob]["N"] / float(ns)), (prob, ns, gbps)
PY

# errors are values: a missing database, an unknown option, an unwritable page
"$TUNE" report --db nosuch.db -o x.html >out.txt 2>&1
check "a missing database exits 1" test $? -eq 1
check "and names it" contains out.txt "nosuch.db"
check "and leaves no page" test ! -e x.html
"$TUNE" report --frobnicate >out.txt 2>&1
check "an unknown option exits 2" test $? -eq 2
"$TUNE" report --db r.db -o /nonexistent-dir/x.html >out.txt 2>&1
check "an unwritable page exits 1" test $? -eq 1
"$TUNE" report --db r.db --metrics nosuch.lua -o m.html >out.txt 2>&1
check "a missing metrics recipe exits 1 and leaves no page" test $? -eq 1 -a ! -e m.html
"$TUNE" report --help >help.txt
check "--help exits 0" test $? -eq 0
check "--help names --metrics" contains help.txt "--metrics RECIPE_FILE"
"$TUNE" report --db "$CMP" --recipe 'gemm.gemv*' -o one.html 2>/dev/null
check "--recipe keeps one recipe" python3 -c 'import re,sys; t=open("one.html").read(); s=set(re.findall(r"data-recipe=\"([^\"]*)\"",t)); assert s=={"gemm.gemv_rows"}, s' 
finish
