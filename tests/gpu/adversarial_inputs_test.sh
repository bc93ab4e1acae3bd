#!/usr/bin/env bash
# The second input set's adversarial data (tests/fixtures/recipes/adversarial.lua): a softmax that
# does not subtract the row maximum is right on the problem's inputs and must end wrong on the
# adversarial ones; the one that subtracts it stays ok. Skipped (77) without a GPU.
. "$(dirname "$0")/../integration/lib.sh"
"$TUNE" run "$SRC/tests/fixtures/recipes/adversarial.lua" --device cuda:0 --db a.db --seed 3 >run.txt 2>&1
rc=$?
skip_without_gpu run.txt
cat run.txt
check "the run completes (rc $rc)" test $rc -eq 0
row() { sql a.db "select r.status || ' ' || coalesce(r.error_text, '') from results r join configs c on c.id=r.config_id where c.params_json='{\"NO_MAX\":$1}' order by r.id desc limit 1"; }
check "the max-subtracting softmax is ok ($(row 0))" test "$(row 0 | cut -d' ' -f1)" = ok
check "the softmax without the max subtraction is wrong ($(row 1))" test "$(row 1 | cut -d' ' -f1)" = wrong
check "... on the second input set" grep -q "second input set" <<<"$(row 1)"
finish
