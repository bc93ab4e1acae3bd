#!/usr/bin/env bash
# tolerance.honest (tests/fixtures/recipes/partials.lua, docs/measurement.md): a split reduction that
# rounds its partial sums to bf16 before adding them must end wrong, named by its honest error,
# while every variant with fp32 partials stays ok; each variant's err_rel_l2 / honest_rel_l2 is
# printed. A variant that trusts unwritten scratch to be zero must end wrong (the poison). Skipped
# (77) without a GPU.
. "$(dirname "$0")/../integration/lib.sh"
"$TUNE" run "$SRC/tests/fixtures/recipes/partials.lua" --device cuda:0 --db h.db --seed 5 >run.txt 2>&1
rc=$?
skip_without_gpu run.txt
cat run.txt
check "the run completes (rc $rc)" test $rc -eq 0
# params|status|err_rel_l2|honest_rel_l2|error_text of each variant's latest result
sql h.db "select c.params_json, r.status, r.err_rel_l2, r.honest_rel_l2, coalesce(r.error_text, '')
          from results r join configs c on c.id = r.config_id
          where r.id in (select max(id) from results group by config_id) order by c.params_json" >rows.txt
echo "variant | status | err_rel_l2 / honest_rel_l2"
awk -F'|' '{ printf "%s | %s | %s\n", $1, $2, ($4 > 0 ? sprintf("%.3f (%.3g / %.3g)", $3 / $4, $3, $4) : "no honest error") }' rows.txt
check "6 variants measured" test "$(wc -l <rows.txt)" -eq 6
while IFS='|' read -r params status err honest text; do
  case "$params" in *scratch_unzeroed*) ;; *)
    check "$params reports its honest error ($honest)" awk -v h="$honest" 'BEGIN { exit !(h > 0) }' ;; esac
  case "$params" in
  *'"PARTIAL":"scratch_unzeroed"'*)
    check "$params trusts unzeroed scratch: wrong ($status: $text)" test "$status" = wrong
    check "... by the NaN poison" grep -q "NaN" <<<"$text" ;;
  *'"PARTIAL":"f32"'*) check "$params is ok ($status: $text)" test "$status" = ok ;;
  *'"SPLIT":1'*) check "$params is ok: one part rounded twice is rounded once ($status: $text)" test "$status" = ok ;;
  *)
    check "$params is wrong ($status)" test "$status" = wrong
    check "... for its honest error ($text)" grep -q "honest error" <<<"$text"
    check "... by tolerance.honest" grep -q "tolerance.honest 1.25" <<<"$text" ;;
  esac
done <rows.txt
finish
