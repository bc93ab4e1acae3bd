#!/usr/bin/env bash
# device_varlen_kv.sh OUTDIR [compare]: verify attention.varlen_kv (chunked prefill) on the GPU:
# exhaustive on the tail, Lq = 1 and non-causal problems, 40 random variants on each of the
# others; with "compare", the fastest against the peers (tune compare, 3 rounds, top 2; cut after
# COMPARE_S seconds, default 300: the report keeps what was compared).
set -u
out=${1:?usage: device_varlen_kv.sh OUTDIR [compare]}
mkdir -p "$out"
cd "$(dirname "$0")/../.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
db=/tmp/varlen_kv.db
R=recipes/attention/varlen_kv.lua
for p in b16q200k520hq32kv8d128c b32q32k16416hq32kv8d128c b8q600k2600hq8kv8d128; do
  build/tune run $R --db $db --strategy exhaustive --seed 1 --quiet --problem $p >>"$out/varlen_kv.run.txt" 2>&1
done
for p in b4q4096k69632hq32kv8d128c b8q8192k73728hq32kv8d128c b2q2048k65536hq32kv8d128c b4q2048k18432hq16kv16d64c; do
  build/tune run $R --db $db --strategy random --budget 40 --seed 1 --quiet --problem $p >>"$out/varlen_kv.run.txt" 2>&1
done
if [ "${2:-}" = compare ]; then
  timeout "${COMPARE_S:-300}" build/tune compare $R --rounds 3 --top-k 2 --db $db >"$out/varlen_kv.compare.txt" 2>&1
  build/tune compare --report last --db $db >"$out/varlen_kv.report.txt" 2>&1
fi
python3 tools/lean_db.py $db "$out/attention.varlen_kv.db" >/dev/null 2>&1
python3 - "$db" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
print("varlen_kv problem | results | ok | wrong | other | worst rel_l2 | best us")
for row in c.execute("""select p.name, count(*), sum(r.status='ok'), sum(r.status='wrong'),
    sum(r.status not in ('ok','wrong')), max(case when r.status='ok' then r.err_rel_l2 end),
    min(case when r.status='ok' then r.median_ns end)/1e3 from results r join problems p on p.id=r.problem_id
    join configs c on c.id=r.config_id where c.origin not like 'peer:%' group by p.name"""):
    print(" | ".join(str(v) for v in row))
PY
