/**
 * The browser half of benchmarks/sidebar_frames.py: opens JupyterLab (the URL, token included) in headless
 * chromium, opens the jupyter-promote sidebar, shows every job ("Show N older jobs" until all are listed),
 * then, per phase, records every frame (requestAnimationFrame deltas) and every long task (PerformanceObserver)
 * from the moment it says `{"ready": phase}` until the live job's row shows the phase's last event.
 * One JSON object a line on stdout; Playwright comes from ui-tests/node_modules (scripts/ui-tests.sh).
 * Usage: node sidebar_frames.mjs URL JOB_ID JOBS PHASE:TEXT...
 */
/* global window, document, requestAnimationFrame -- record() and collect() run in the page */
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { chromium } = createRequire(import.meta.url)(path.join(root, 'ui-tests', 'node_modules', 'playwright-core'));
const [url, job, jobs, ...phases] = process.argv.slice(2);
const say = message => process.stdout.write(JSON.stringify(message) + '\n');

/** In the page: record frames and long tasks into window.promoteFrames. */
function record() {
  const seen = { frames: [], longTasks: [], stop: false, start: performance.now(), shownAt: null };
  window.promoteFrames = seen;
  let last = null;
  const tick = now => {
    if (last !== null) {
      seen.frames.push(now - last);
    }
    last = now;
    if (!seen.stop) {
      requestAnimationFrame(tick);
    }
  };
  requestAnimationFrame(tick);
  seen.observer = new PerformanceObserver(list => list.getEntries().forEach(e => seen.longTasks.push(e.duration)));
  seen.observer.observe({ type: 'longtask' });
}

/** In the page: stop recording; what was recorded. */
function collect() {
  const seen = window.promoteFrames;
  seen.stop = true;
  seen.observer.disconnect();
  return { frames: seen.frames, longTasks: seen.longTasks, ms: performance.now() - seen.start };
}

const browser = await chromium.launch({
  executablePath: process.env.PROMOTE_CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update']
});
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  await page.goto(url);
  const tab = page.locator('.lm-TabBar-tab[data-id="jupyter-promote-jobs"]');
  await tab.waitFor({ timeout: 180000 });
  await tab.click();
  const rows = page.locator('#jupyter-promote-jobs .jp-Promote-job');
  const older = page.locator('#jupyter-promote-jobs .jp-Promote-loadOlder');
  const start = Date.now();
  while ((await rows.count()) < Number(jobs)) {
    if (Date.now() - start > 120000) {
      throw new Error(`the sidebar lists ${await rows.count()} of ${jobs} jobs after 120 s`);
    }
    if ((await older.count()) > 0 && (await older.isEnabled())) {
      await older.dispatchEvent('click'); // a toast over it does not stop a click
    }
    await page.waitForTimeout(100);
  }
  say({ listed: await rows.count(), older: await older.count(), s: (Date.now() - start) / 1000 });
  const row = `#jupyter-promote-jobs .jp-Promote-job[data-job="${job}"]`;
  await page.locator(`${row}[data-state="running"]`).waitFor({ timeout: 60000 });
  for (const phase of phases) {
    const [name, text] = phase.split(':', 2);
    await page.evaluate(record);
    say({ ready: name });
    await page.waitForFunction(
      ([selector, last]) => document.querySelector(selector)?.textContent?.includes(last),
      [row, text],
      { timeout: 60000, polling: 100 }
    );
    await page.waitForTimeout(300); // the frames right after the last update
    say({ phase: name, ...(await page.evaluate(collect)) });
  }
} finally {
  await browser.close();
}
