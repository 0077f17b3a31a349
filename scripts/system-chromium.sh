#!/usr/bin/env bash
# Make Debian's chromium the browser Playwright finds, for tools that launch Playwright without an
# executablePath and run `playwright install` first (jupyterlab.browser_check): no browser download
# works on these machines. Prints the PLAYWRIGHT_BROWSERS_PATH to export.
# Usage: scripts/system-chromium.sh PLAYWRIGHT_CORE_DIR BROWSERS_DIR
set -euo pipefail
core=$1
dest=$2
chromium=${PROMOTE_CHROMIUM:-/usr/bin/chromium}
[ -x "$chromium" ] || { echo "system-chromium: $chromium not found (apt-get install -y chromium)" >&2; exit 1; }
rev() { python3 -c "import json,sys; print(next(b['revision'] for b in json.load(open(sys.argv[1]))['browsers'] if b['name'] == sys.argv[2]))" "$core/browsers.json" "$1"; }
revision=$(rev chromium)
for spec in "chromium-$revision/chrome-linux64/chrome" "chromium_headless_shell-$revision/chrome-headless-shell-linux64/chrome-headless-shell"; do
  dir="$dest/${spec%%/*}"
  mkdir -p "$(dirname "$dest/$spec")"
  ln -sf "$chromium" "$dest/$spec"
  touch "$dir/INSTALLATION_COMPLETE" "$dir/DEPENDENCIES_VALIDATED"
done
# ffmpeg only records videos, which the tests turn off; mark it installed so `install` does not fetch it
ffmpeg="$dest/ffmpeg-$(rev ffmpeg)"
mkdir -p "$ffmpeg" && ln -sf "$(command -v ffmpeg || echo /bin/false)" "$ffmpeg/ffmpeg-linux"
touch "$ffmpeg/INSTALLATION_COMPLETE" "$ffmpeg/DEPENDENCIES_VALIDATED"
echo "$dest"
