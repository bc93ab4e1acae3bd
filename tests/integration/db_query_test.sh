#!/usr/bin/env bash
# tune db as users query it: --where filters and --format table|json|csv on a replayed run, the
# schema's views for sqlite3, and the errors for an unknown filter key or format.
. "$(dirname "$0")/lib.sh"
REC="$SRC/data/recorded/copy.db"
"$TUNE" run "$SRC/recipes/copy.lua" --device "replay:$REC" --db r.db --quiet >run.txt 2>&1
check "replay run exits 0" test $? -eq 0

# CSV of the ok results: RFC 4180 (CRLF), a header, one record per ok result
"$TUNE" db list --db r.db --where status=ok --format csv >ok.csv
check "list --where status=ok --format csv exits 0" test $? -eq 0
n_ok=$(sql r.db "select count(*) from results where status = 'ok'")
check "csv: one record per ok result ($n_ok)" python3 - ok.csv "$n_ok" <<'PY'
import csv, sys
raw = open(sys.argv[1], newline="").read()
assert raw.endswith("\r\n") and raw.count("\r\n") == raw.count("\n"), "CRLF line ends"
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
assert len(rows) == int(sys.argv[2]), (len(rows), sys.argv[2])
assert all(r["status"] == "ok" and r["recipe"] == "copy" and r["timing"] == "burst" for r in rows)
assert all(float(r["median_ns"]) > 0 and r["params.BLOCK"] for r in rows)
PY
"$TUNE" db list --db r.db --where status=ok --json >ok.json
check "--json and --format json agree with csv" python3 - ok.csv ok.json <<'PY'
import csv, json, sys
ids = [int(r["id"]) for r in csv.DictReader(open(sys.argv[1], newline=""))]
assert ids == [r["id"] for r in json.load(open(sys.argv[2]))]
PY
"$TUNE" db list --db r.db --status ok --problem 64MiB --format json >alias.json
"$TUNE" db list --db r.db --where status=ok --where problem=64MiB --format json >where.json
check "--status/--problem are --where aliases" cmp -s alias.json where.json
check "... and filter (64MiB only)" python3 -c '
import json; r = json.load(open("where.json")); assert r and all(x["problem"] == "64MiB" for x in r)'
"$TUNE" db best --db r.db --where problem=256MiB >best.txt
check "best --where problem: a table of 256MiB only" test "$(grep -c MiB best.txt)" -eq 1
origin=$(sql r.db "select origin from configs limit 1")  # the strategy's name
"$TUNE" db best --db r.db --where "origin=${origin:0:2}*" --format csv >best.csv
check "best: an origin prefix ($origin), as csv" test "$(sql r.db "select count(distinct problem_id) from results where status = 'ok'")" -eq "$(($(wc -l <best.csv) - 1))"
"$TUNE" db best --db r.db --where "origin=peer:*" --format csv >none.csv
check "best: a prefix matching nothing gives the header line only" test "$(wc -c <none.csv)" -eq 2
"$TUNE" db show --db r.db --where problem=64MiB --where status=ok --limit 2 --format json >show.json
check "show --where: the results it selects" python3 -c '
import json; r = json.load(open("show.json")); assert len(r) == 2 and all(x["problem"]["name"] == "64MiB" for x in r)'

# the views give what tune db best gives
"$TUNE" db best --db r.db --json >best.json
check "v_best equals tune db best" python3 - r.db best.json <<'PY'
import json, sqlite3, sys
got = sorted(r[0] for r in sqlite3.connect(sys.argv[1]).execute("select result_id from v_best"))
assert got == sorted(r["result_id"] for r in json.load(open(sys.argv[2]))), got
PY

# errors
"$TUNE" db list --db r.db --where colour=red >bad.txt 2>&1
check "unknown key: exit 2" test $? -eq 2
check "... naming the valid keys" contains bad.txt "recipe, problem, device, status, origin, timing"
"$TUNE" db list --db r.db --format xml >bad2.txt 2>&1
check "unknown format: exit 2" test $? -eq 2
check "... naming the valid ones" contains bad2.txt "table, json or csv"
"$TUNE" db list --db r.db --where status >bad3.txt 2>&1
check "--where without =: exit 2" test $? -eq 2
finish
