#!/usr/bin/env bash
# Renders HTML reports in headless Chromium at 1300 and 400 px wide, keeps a screenshot of
# each, and fails when a page overflows sideways: the page wider than the window, or an element
# reaching past the window's right edge outside a box that scrolls (wide tables scroll inside
# their frame, by design). The reports themselves have no script: the measuring script is in
# a page that frames them.
#   scripts/check-report-layout.sh [--shots DIR] REPORT.html...
# Needs Chromium (apt-get install chromium).
set -euo pipefail
shots=""
if [ "${1:-}" = "--shots" ]; then shots=$2; shift 2; fi
[ $# -gt 0 ] || { echo "usage: $0 [--shots DIR] REPORT.html..." >&2; exit 2; }
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
[ -n "$browser" ] || { echo "check-report-layout: no chromium on PATH (apt-get install chromium)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The page is laid out in a frame of the width under test (a headless window is at least
# 500 px wide), and measured from outside it; the copy of the page gets nothing added.
wrapper() { # WIDTH PAGE
  cat <<HTML
<!DOCTYPE html><html><head><title>RENDERING</title></head><body style="margin:0">
<iframe id="f" src="$2" style="border:0;width:${1}px;height:6000px"></iframe>
<script>
document.getElementById("f").onload = function () {
  var win = this.contentWindow, doc = win.document, w = doc.documentElement.clientWidth, bad = [];
  if (doc.documentElement.scrollWidth > w + 1)
    bad.push("page is " + doc.documentElement.scrollWidth + " px wide in a " + w + " px window");
  doc.querySelectorAll("body *").forEach(function (e) {
    var r = e.getBoundingClientRect();
    if (r.width === 0 || r.right <= w + 1) return;
    for (var p = e.parentElement; p; p = p.parentElement) {
      var o = win.getComputedStyle(p).overflowX;
      if (o === "auto" || o === "scroll" || o === "hidden") return;
    }
    var c = typeof e.className === "string" ? e.className : "";
    bad.push(e.tagName.toLowerCase() + (c ? "." + c.split(" ").join(".") : "") +
      " ends at " + Math.round(r.right) + " px");
  });
  document.title = bad.length ? "OVERFLOW " + bad.slice(0, 4).join("; ") : "LAYOUT-OK";
};
</script></body></html>
HTML
}
run_browser() {
  # No sandbox: CI runs as root, where Chromium refuses its sandbox.
  timeout 60 "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars \
    --allow-file-access-from-files "$@" 2>/dev/null
}
failed=0
n=0
for report in "$@"; do
  [ -f "$report" ] || { echo "check-report-layout: $report: no such file" >&2; exit 2; }
  n=$((n + 1))
  cp "$report" "$work/page$n.html"
  for width in 1300 400; do
    wrapper "$width" "page$n.html" >"$work/frame$n-$width.html"
    title=$(run_browser --window-size="$((width + 20)),2000" --virtual-time-budget=5000 --dump-dom \
      "file://$work/frame$n-$width.html" | sed -n 's:.*<title>\(.*\)</title>.*:\1:p' | head -1 || true)
    case "$title" in
      LAYOUT-OK) echo "ok       $width px  $report" ;;
      OVERFLOW*) echo "OVERFLOW $width px  $report: ${title#OVERFLOW }"; failed=1 ;;
      *) echo "check-report-layout: $report at $width px: the page did not render (title '$title')" >&2; failed=1 ;;
    esac
    if [ -n "$shots" ]; then
      mkdir -p "$shots"
      name=$(basename "$(dirname "$report")")-$(basename "$report" .html)-$width.png
      run_browser --window-size="$((width < 500 ? 500 : width)),6000" --screenshot="$shots/$name" \
        "file://$work/frame$n-$width.html" >/dev/null || true
      [ -s "$shots/$name" ] || { echo "check-report-layout: no screenshot $shots/$name" >&2; failed=1; }
    fi
  done
done
exit $failed
