#!/usr/bin/env bash
# The frontend's tests: Jest for the labextension's models, `python -m jupyterlab.browser_check`, and the
# galata (Playwright) tests in ui-tests/ against a real JupyterLab in Debian's chromium (no browser
# download works here). Screenshots land in ui-tests/artifacts/. Exits non-zero when any test fails.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
export PATH="$root/.venv/bin:$PATH"
if ! command -v chromium >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q chromium >/dev/null || { apt-get update -q >/dev/null && apt-get install -y -q chromium >/dev/null; }
fi
status=0
echo "ui-tests: jest"
jlpm jest || status=1
(cd ui-tests && jlpm install >/dev/null)
mkdir -p ui-tests/artifacts
# browser_check runs `npx playwright install chromium` and launches Playwright's own chromium: point both
# at Debian's, through a browsers directory of links, and give it the Playwright ui-tests/ installed
export PLAYWRIGHT_BROWSERS_PATH=$(bash scripts/system-chromium.sh ui-tests/node_modules/playwright-core "$root/.playwright-browsers")
app_dir=$(jupyter lab path | sed -n 's/^Application directory: *//p')
mkdir -p "$app_dir/browser_test" && ln -sfn "$root/ui-tests/node_modules" "$app_dir/browser_test/node_modules"
echo "ui-tests: jupyterlab.browser_check"
(cd "$(mktemp -d)" && python -m jupyterlab.browser_check --allow-root >"$root/ui-tests/artifacts/browser_check.log" 2>&1) \
  && echo "browser_check: OK" || { echo "FAIL: browser_check (ui-tests/artifacts/browser_check.log)"; tail -20 "$root/ui-tests/artifacts/browser_check.log"; status=1; }
echo "ui-tests: galata"
(cd ui-tests && CI=1 jlpm playwright test) || status=1
# the same button as a user has it: the rig's user, the installed wheel, a server started in a project folder
if id "${PROMOTE_RIG_USER:-promote-user}" >/dev/null 2>&1; then
  echo "ui-tests: galata in the rig"
  (cd ui-tests && CI=1 jlpm playwright test -c playwright.rig.config.js) || status=1
  sleep 5  # the user's server stops on SIGTERM (scripts/rig-lab.sh); whatever is left is stopped here
  pkill -u "${PROMOTE_RIG_USER:-promote-user}" -f jupyter_server_rig_config.py && echo "ui-tests: stopped the rig's server" || true
else
  echo "FAIL: no rig user: run scripts/rig.sh first"; status=1
fi
exit $status
