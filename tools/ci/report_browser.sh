#!/usr/bin/env bash
# report_browser.sh: render tune report's pages in headless Chromium and fail on script or
# rendering errors. Pages: one per database under data/compare/ (gemm's with --metrics, so the
# roofline has points). Each is loaded as HTML (console messages, a DOM with its four sections)
# and as XHTML (the XML parser's errors: a page that is not well-formed shows a parsererror).
# A page made to fail first checks that the checks can fail. Installs chromium with apt-get when
# missing. REPORT_KEEP=DIR keeps the pages and screenshots there.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ -x build/tune ] || bash scripts/setup.sh >/dev/null
if ! command -v chromium >/dev/null; then
  apt-get update >/dev/null && apt-get install -y chromium >/dev/null
fi
out=${REPORT_KEEP:-$(mktemp -d)}
mkdir -p "$out"

# render PAGE: 0 when Chromium logs no console message, its DOM has the page's sections, and
# the XHTML parse reports no error; otherwise says what and returns 1.
render() {
  local page=$1 base=${1%.html}
  chromium --headless --disable-gpu --no-sandbox --enable-logging=stderr --v=0 --virtual-time-budget=2000 \
    --dump-dom "file://$page" >"$base.dom" 2>"$base.log" || { echo "report_browser: chromium failed on $page" >&2; return 1; }
  if grep -E ':CONSOLE[:(]|Uncaught' "$base.log" >&2; then echo "report_browser: console messages from $page" >&2; return 1; fi
  for id in progress roofline peers selections; do
    grep -q "<section id=\"$id\"" "$base.dom" || { echo "report_browser: $page: no section $id after rendering" >&2; return 1; }
  done
  cp "$page" "$base.xhtml"
  chromium --headless --disable-gpu --no-sandbox --dump-dom "file://$base.xhtml" >"$base.xdom" 2>/dev/null || return 1
  if grep -q parsererror "$base.xdom"; then echo "report_browser: $page is not well-formed XHTML" >&2; return 1; fi
  chromium --headless --disable-gpu --no-sandbox --hide-scrollbars --window-size=1300,2000 \
    --screenshot="$base.png" "file://$page" >/dev/null 2>&1 || { echo "report_browser: no screenshot of $page" >&2; return 1; }
  test -s "$base.png"
}

# the checks must be able to fail: a script error, then a page that is not well-formed
build/tune report --db data/compare/h100-2026-11-26-all/copy.db -o "$out/bad-script.html" 2>/dev/null
sed -i 's|</body>|<script>undefined_function();</script></body>|' "$out/bad-script.html"
if render "$out/bad-script.html" 2>/dev/null; then echo "report_browser: a script error went unnoticed" >&2; exit 1; fi
build/tune report --db data/compare/h100-2026-11-26-all/copy.db -o "$out/bad-xml.html" 2>/dev/null
sed -i 's|</figure>|</figure></p>|' "$out/bad-xml.html"
if render "$out/bad-xml.html" 2>/dev/null; then echo "report_browser: a page that is not well-formed went unnoticed" >&2; exit 1; fi

. tools/bench/compare_dbs.sh
n=0
for d in data/compare/*/; do
  while read -r db; do
    name=$(basename "$d")-$(basename "$db" .db)
    metrics=()
    [ "$(basename "$db")" = gemm.db ] && metrics=(--metrics recipes/gemm.lua)
    build/tune report --db "$db" -o "$out/$name.html" "${metrics[@]}" 2>/dev/null
    render "$out/$name.html"
    n=$((n + 1))
  done < <(compare_dbs "${d%/}")
done
echo "report_browser: $n pages rendered without errors ($out)"
