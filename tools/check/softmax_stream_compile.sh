#!/usr/bin/env bash
# softmax_stream_compile.sh: compile every config of recipe softmax.stream (recipes/softmax/stream.lua,
# templates/softmax/stream.cuh) with NVRTC for sm_90a (tune run --compile-only: no GPU needed) and
# print registers and spills per problem and config; fails if any variant does not compile or none
# was compiled. ~1 minute on two cores.
#   usage: tools/check/softmax_stream_compile.sh [TUNE_BINARY]   (default build/tune)
set -euo pipefail
cd "$(dirname "$0")/../.."
tune=${1:-build/tune}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$tune" run recipes/softmax/stream.lua --compile-only --db "$work/c.db" --jobs 2 --quiet > "$work/log" 2>&1 ||
  { cat "$work/log"; exit 1; }
python3 - "$work/c.db" <<'EOF'
import json, sqlite3, sys
c = sqlite3.connect(sys.argv[1])
rows = c.execute("""SELECT p.name, cf.params_json, r.status, r.error_text, r.registers, r.spill_stores, r.spill_loads
                    FROM results r JOIN configs cf ON cf.id = r.config_id JOIN problems p ON p.id = r.problem_id
                    JOIN recipes rc ON rc.id = r.recipe_id WHERE rc.name = 'softmax.stream'
                    AND (r.status != 'skipped' OR r.error_text = 'compile-only') ORDER BY p.id, cf.id""").fetchall()
bad = [r for r in rows if r[2] != "skipped"]
spills = 0
for prob, pj, st, err, regs, sst, sld in rows:
    spills += (sst or 0) + (sld or 0) > 0
    print(f"{'ok  ' if st == 'skipped' else 'FAIL'} {prob:12s} {pj} regs {regs} spill st {sst} ld {sld} {'' if st == 'skipped' else err}")
print(f"summary: {len(rows)} variants, {len(bad)} failed, {spills} with spills")
sys.exit(1 if bad or not rows else 0)
EOF
