/**
 * jupyter-promote in a real JupyterLab, in a real browser: promote from the button, watch the job in
 * the sidebar, a NaN alert, cancel, a reload mid-run, a server error shown beside its field, charts over
 * the time elapsed, deleting a finished job, and the notification destinations of the dialog.
 * Jobs run for real on the local target (a papermill run with the injected monitor).
 */
import { expect, galata, IJupyterLabPageFixture, test } from '@jupyterlab/galata';
import * as path from 'path';

const NOTEBOOKS = path.resolve(__dirname, '..', 'notebooks');
const ARTIFACTS = path.resolve(__dirname, '..', 'artifacts');
/** The screenshots the documentation shows (committed): the dialog and the sidebar's job detail. */
const DOC_IMAGES = path.resolve(__dirname, '..', '..', 'docs', 'images');

test.use({ autoGoto: true });

async function upload(page: IJupyterLabPageFixture, tmpPath: string, name: string): Promise<string> {
  const target = `${tmpPath}/${name}`;
  await page.contents.uploadFile(path.join(NOTEBOOKS, name), target);
  await page.filebrowser.refresh();
  return target;
}

/** The open Promote dialog, once the notebook's environment and parameters are read. */
async function dialogReady(page: IJupyterLabPageFixture) {
  const dialog = page.locator('.jp-Dialog');
  await expect(dialog.locator('.jp-Promote-form')).toBeVisible();
  await expect(dialog.locator('.jp-Promote-image')).toBeVisible({ timeout: 120000 });
  return dialog;
}

/** Open the Promote dialog from the file browser's context menu; the dialog, once ready. */
async function openDialogFromBrowser(page: IJupyterLabPageFixture, name: string) {
  await page.locator(`.jp-DirListing-item[title^="Name: ${name}"]`).click({ button: 'right' });
  await page.locator('.lm-Menu-item:has-text("Promote to cluster")').click();
  return dialogReady(page);
}

/** Promote a notebook from the file browser's context menu, with some parameters changed. */
async function promoteFromBrowser(
  page: IJupyterLabPageFixture,
  name: string,
  parameters: Record<string, string> = {}
): Promise<string> {
  const dialog = await openDialogFromBrowser(page, name);
  for (const [parameter, value] of Object.entries(parameters)) {
    await dialog.locator(`input[data-parameter="${parameter}"]`).fill(value);
  }
  await dialog.locator('.jp-Dialog-button.jp-mod-accept').click();
  return jobOnDetail(page);
}

/** A job's record, as `GET /jupyter-promote/jobs/{id}` answers it (null: the server has no such job). */
async function jobRecord(page: IJupyterLabPageFixture, id: string): Promise<Record<string, unknown> | null> {
  const response = await page.request.get(new URL(`/jupyter-promote/jobs/${id}`, page.url()).href);
  if (response.status() === 404) {
    return null;
  }
  expect(response.ok()).toBe(true);
  return response.json();
}

/** The id of the job the sidebar's detail view shows. */
async function jobOnDetail(page: IJupyterLabPageFixture): Promise<string> {
  const detail = page.locator('.jp-Promote-detail');
  await expect(detail).toBeVisible();
  return (await detail.getAttribute('data-job'))!;
}

function badge(page: IJupyterLabPageFixture) {
  return page.locator('.jp-Promote-detail .jp-Promote-detailHeader [data-state]');
}

test('promote from the notebook toolbar and watch it go queued, running, succeeded', async ({ page, tmpPath }) => {
  const notebook = await upload(page, tmpPath, 'train.ipynb');
  await page.notebook.openByPath(notebook);
  await page.notebook.activate('train.ipynb');

  await page.locator('.jp-NotebookPanel-toolbar [data-jp-item-name="promote"] .jp-ToolbarButtonComponent').click();
  const dialog = await dialogReady(page);
  // the parameters cell, pre-filled and typed; the environment preview
  await expect(dialog.locator('input[data-parameter="steps"]')).toHaveValue('300');
  await expect(dialog.locator('input[data-parameter="lr"]')).toHaveValue('0.05');
  await expect(dialog.locator('.jp-Promote-environment')).toContainText('torch');
  await expect(dialog.locator('select.jp-Promote-target option[value="local"]')).toBeEnabled();
  await dialog.locator('input[data-parameter="steps"]').fill('400');
  await page.screenshot({ path: path.join(ARTIFACTS, 'dialog-light.png') });
  await dialog.locator('.jp-Dialog-button.jp-mod-accept').click();

  const id = await jobOnDetail(page);
  await expect(badge(page)).toHaveAttribute('data-state', 'running');
  await expect(page.locator('.jp-Promote-chart[aria-label="steps/s"] canvas')).toBeVisible();
  await expect(badge(page)).toHaveAttribute('data-state', 'succeeded', { timeout: 120000 });
  const stages = page.locator('.jp-Promote-stages li');
  await expect(stages).toHaveText([/freezing/, /queued/, /running/, /succeeded/]);
  await expect(page.locator('.jp-Promote-metrics')).toContainText('accuracy');
  await expect(page.locator('.jp-Promote-log[aria-label="Job log"]')).toContainText('trained 400 steps');
  await expect(page.locator('.Toastify__toast').filter({ hasText: 'succeeded' })).toBeVisible();
  await page.screenshot({ path: path.join(ARTIFACTS, 'sidebar-detail-light.png') });
  // its report (written as the job ended) opens in a page of its own, in a sandbox: the verdict above the
  // notebook's own cells and outputs
  const report = new URL(`/jupyter-promote/jobs/${id}/report`, page.url()).href;
  await expect.poll(async () => (await page.request.get(report)).status(), { timeout: 30000 }).toBe(200);
  expect((await page.request.get(report)).headers()['content-security-policy']).toContain('sandbox');
  const [opened] = await Promise.all([
    page.context().waitForEvent('page'),
    page.locator('.jp-Promote-detail a.jp-Promote-report').click()
  ]);
  await opened.waitForLoadState();
  await expect(opened.locator('body')).toContainText('succeeded');
  await expect(opened.locator('body')).toContainText('trained 400 steps');
  await opened.close();
  // the output notebook opens, copied next to the source notebook
  await page.locator('.jp-Promote-actions button:has-text("Open output")').click();
  await expect(page.locator(`.lm-TabBar-tab:has-text("train.promote-${id.slice(0, 8)}.ipynb")`)).toBeVisible();

  // the list shows it, with its parameters; and the dark theme keeps it readable
  await page.locator('button[aria-label="Back to the job list"]').click();
  const row = page.locator(`.jp-Promote-job[data-job="${id}"]`);
  await expect(row).toHaveAttribute('data-state', 'succeeded');
  await expect(row).toContainText('steps=400');
  await page.theme.setDarkTheme();
  await row.locator('button').focus(); // keyboard reachable: Enter opens the job
  await page.keyboard.press('Enter');
  await expect(page.locator('.jp-Promote-detail')).toBeVisible();
  await page.screenshot({ path: path.join(ARTIFACTS, 'sidebar-detail-dark.png') });
  const colours = await page.evaluate(() => {
    const panel = document.querySelector('.jp-Promote-panel')!;
    return [getComputedStyle(panel).backgroundColor, getComputedStyle(panel).color];
  });
  expect(colours[0]).not.toEqual(colours[1]);
  expect(colours[0]).not.toEqual('rgb(255, 255, 255)');
  // a theme switch redraws the charts in the new theme's colours
  const canvas = page.locator('.jp-Promote-chart[aria-label="steps/s"] canvas');
  await canvas.evaluate(el => el.setAttribute('data-drawn-in', 'dark'));
  await page.theme.setLightTheme();
  await expect(canvas).not.toHaveAttribute('data-drawn-in', 'dark');
});

test('a server error appears in the dialog beside the field it concerns', async ({ page, tmpPath }) => {
  await upload(page, tmpPath, 'train.ipynb');
  await page.locator('.jp-DirListing-item[title^="Name: train.ipynb"]').click({ button: 'right' });
  await page.locator('.lm-Menu-item:has-text("Promote to cluster")').click();
  let dialog = await dialogReady(page);
  await dialog.locator('input[aria-label="Resource memory"]').fill('lots');
  await dialog.locator('.jp-Dialog-button.jp-mod-accept').click();
  dialog = page.locator('.jp-Dialog');
  const error = dialog.locator('.jp-Promote-fieldError[data-field="resources.memory"]');
  await expect(error).toContainText("resources.memory 'lots': not a size");
  await expect(dialog.locator('input[aria-label="Resource memory"]')).toHaveValue('lots'); // nothing typed is lost
  await page.screenshot({ path: path.join(ARTIFACTS, 'dialog-error.png') });
  await dialog.locator('.jp-Dialog-button.jp-mod-reject').click();
  await expect(page.locator('.jp-Dialog')).toHaveCount(0);
});

test('a diverging notebook shows its NaN alert, explained, and a notification', async ({ page, tmpPath }) => {
  await upload(page, tmpPath, 'diverge.ipynb');
  await promoteFromBrowser(page, 'diverge.ipynb');
  const alert = page.locator('.jp-Promote-alert[data-kind="nan"]');
  await expect(alert).toBeVisible({ timeout: 120000 });
  await expect(alert).toContainText('learning rate');
  await expect(badge(page)).toHaveAttribute('data-state', 'failed');
  await expect(page.locator('.jp-Promote-reason')).toHaveText('nan');
  await expect(page.locator('.Toastify__toast').filter({ hasText: 'nan alert' }).first()).toBeVisible();
  await page.screenshot({ path: path.join(ARTIFACTS, 'sidebar-nan-alert.png') });
});

test('cancel a running job', async ({ page, tmpPath }) => {
  await upload(page, tmpPath, 'hang.ipynb');
  await promoteFromBrowser(page, 'hang.ipynb');
  await expect(badge(page)).toHaveAttribute('data-state', 'running');
  await expect(page.locator('.jp-Promote-log[aria-label="Job log"]')).toContainText('working');
  await page.locator('.jp-Promote-actions button:has-text("Cancel")').click();
  await expect(badge(page)).toHaveAttribute('data-state', 'cancelled');
  await expect(page.locator('.jp-Promote-actions button:has-text("Cancel")')).toHaveCount(0); // ended: no Cancel
  await expect(page.locator('.jp-Promote-actions button:has-text("Delete")')).toBeVisible();
  // rerun: the same request as a new job, shown at once, which runs (and is cancelled in turn)
  const first = await jobOnDetail(page);
  await page.locator('.jp-Promote-actions button:has-text("Rerun")').click();
  await expect(page.locator('.jp-Promote-detail')).not.toHaveAttribute('data-job', first);
  await expect(badge(page)).toHaveAttribute('data-state', 'running');
  await page.locator('.jp-Promote-actions button:has-text("Cancel")').click();
  await expect(badge(page)).toHaveAttribute('data-state', 'cancelled');
});

test('a reload mid-run keeps the job, and it stays live', async ({ page, tmpPath }) => {
  await upload(page, tmpPath, 'train.ipynb');
  const id = await promoteFromBrowser(page, 'train.ipynb', { steps: '1500' });
  await expect(badge(page)).toHaveAttribute('data-state', 'running');

  await page.reload();
  await page.sidebar.openTab('jupyter-promote-jobs' as galata.SidebarTabId);
  const row = page.locator(`.jp-Promote-job[data-job="${id}"]`);
  await expect(row).toHaveAttribute('data-state', 'running');
  await row.locator('button').click();
  // still live: it reaches its end on this page, with no second reload
  await expect(badge(page)).toHaveAttribute('data-state', 'succeeded', { timeout: 120000 });
  await expect(page.locator('.jp-Promote-stages li')).toHaveText([/freezing/, /queued/, /running/, /succeeded/]);
  await page.screenshot({ path: path.join(ARTIFACTS, 'sidebar-after-reload.png') });
});

test('the showFinished setting hides finished jobs from the list', async ({ page, tmpPath }) => {
  await upload(page, tmpPath, 'train.ipynb');
  const id = await promoteFromBrowser(page, 'train.ipynb', { steps: '20' });
  await expect(badge(page)).toHaveAttribute('data-state', 'succeeded', { timeout: 120000 });
  await page.locator('button[aria-label="Back to the job list"]').click();
  const row = page.locator(`.jp-Promote-job[data-job="${id}"]`);
  await expect(row).toBeVisible();

  // the Settings Editor's way: through the setting registry, which the sidebar follows live
  const setShowFinished = (value: boolean) =>
    page.evaluate(async value => {
      const registry = await window.galata.getPlugin('@jupyterlab/apputils-extension:settings');
      await registry!.set('jupyter-promote:plugin', 'showFinished', value);
    }, value);
  await setShowFinished(false);
  try {
    await expect(page.locator('select[aria-label="Filter jobs by state"] option').first()).toHaveText('live jobs');
    await expect(row).toHaveCount(0);
    // a state filter still finds it
    await page.locator('select[aria-label="Filter jobs by state"]').selectOption('succeeded');
    await expect(row).toBeVisible();
  } finally {
    await setShowFinished(true);
  }
});

test('a finished job: charts over the time elapsed, a log that scrolls, no Cancel, Delete', async ({
  page,
  tmpPath
}) => {
  await upload(page, tmpPath, 'chatty.ipynb'); // about 9 s of training, one log line per step
  const id = await promoteFromBrowser(page, 'chatty.ipynb');
  await expect(page.locator('.jp-Promote-actions button:has-text("Delete")')).toHaveCount(0); // live: no Delete
  await expect(badge(page)).toHaveAttribute('data-state', 'succeeded', { timeout: 120000 });
  expect((await jobRecord(page, id))!.notify).toEqual(['hook']); // the dialog's default, ticked

  // the x axes count seconds since the job started, never dates (uPlot's default read them as years)
  for (const chart of ['steps/s', 'reported metrics']) {
    const axis = page.locator(`.jp-Promote-chart[aria-label="${chart}"] [data-x-ticks]`);
    await expect(axis).toHaveAttribute('data-x-ticks', /\d s/);
    const ticks = (await axis.getAttribute('data-x-ticks'))!.split(' | ');
    expect(ticks.length).toBeGreaterThan(1);
    for (const tick of ticks) {
      expect(tick).toMatch(/^\d+(\.\d+)? s$/);
    }
  }

  const actions = page.locator('.jp-Promote-actions');
  await expect(actions.locator('button:has-text("Cancel")')).toHaveCount(0);
  await expect(actions.locator('button:has-text("Delete")')).toBeVisible();

  // a long log scrolls in its own box, at its end; the panel scrolled down, the controls stay in view
  const log = page.locator('.jp-Promote-log[aria-label="Job log"]');
  await expect(log).toContainText('step  599');
  const box = await log.evaluate(el => ({
    overflow: getComputedStyle(el).overflowY,
    scrollHeight: el.scrollHeight,
    clientHeight: el.clientHeight,
    scrollTop: el.scrollTop
  }));
  expect(box.overflow).toBe('auto');
  expect(box.clientHeight).toBeLessThanOrEqual(240 + 8); // max-height, and the padding
  expect(box.scrollHeight).toBeGreaterThan(2 * box.clientHeight);
  expect(box.scrollTop + box.clientHeight).toBeGreaterThanOrEqual(box.scrollHeight - 8);
  const panel = page.locator('.jp-Promote-panel');
  await panel.evaluate(el => (el.scrollTop = el.scrollHeight));
  await expect(actions.locator('button:has-text("Delete")')).toBeInViewport();
  await panel.evaluate(el => (el.scrollTop = 0));
  await panel.screenshot({ path: path.join(DOC_IMAGES, 'sidebar.png'), style: '.Toastify { display: none; }' });

  // Delete asks first: declined, nothing happens
  await actions.locator('button:has-text("Delete")').click();
  let confirm = page.locator('.jp-Dialog');
  await expect(confirm).toContainText(`Delete job ${id}?`);
  await confirm.locator('.jp-Dialog-button.jp-mod-reject').click();
  await expect(page.locator('.jp-Promote-detail')).toHaveAttribute('data-job', id);
  expect(await jobRecord(page, id)).not.toBeNull();
  // confirmed: the job leaves the list, and the server has it no more
  await actions.locator('button:has-text("Delete")').click();
  confirm = page.locator('.jp-Dialog');
  await confirm.locator('.jp-Dialog-button.jp-mod-accept:has-text("Delete")').click();
  await expect(page.locator('.jp-Promote-list')).toBeVisible();
  await expect(page.locator(`.jp-Promote-job[data-job="${id}"]`)).toHaveCount(0);
  expect(await jobRecord(page, id)).toBeNull();
});

test('the dialog offers the notification destinations; unticked, the job notifies nobody', async ({
  page,
  tmpPath
}) => {
  await upload(page, tmpPath, 'train.ipynb');
  const dialog = await openDialogFromBrowser(page, 'train.ipynb');
  const notify = dialog.locator('.jp-Promote-notify');
  await expect(notify).toContainText('hook');
  await expect(notify).toContainText('webhook');
  const hook = notify.locator('input[data-destination="hook"]');
  await expect(hook).toBeChecked(); // c.Notifications.defaults
  await dialog.locator('input[data-parameter="steps"]').fill('20');
  // the documentation's picture shows the whole form: JupyterLab caps a dialog at 500 px (the rest scrolls)
  await page.setViewportSize({ width: 1280, height: 1800 });
  const content = page.locator('.jp-Dialog-content');
  await content.evaluate(el => (el.style.maxHeight = 'none'));
  await content.screenshot({ path: path.join(DOC_IMAGES, 'dialog.png') });
  await content.evaluate(el => (el.style.maxHeight = ''));
  await hook.uncheck();
  await dialog.locator('.jp-Dialog-button.jp-mod-accept').click();
  const id = await jobOnDetail(page);
  expect((await jobRecord(page, id))!.notify).toEqual([]);
  await expect(badge(page)).toHaveAttribute('data-state', 'succeeded', { timeout: 120000 });
});

test('a notebook put on a schedule from the dialog: its next five runs, then in the sidebar', async ({
  page,
  tmpPath
}) => {
  await upload(page, tmpPath, 'train.ipynb');
  const dialog = await openDialogFromBrowser(page, 'train.ipynb');
  await dialog.locator('input[type="radio"][value="schedule"]').check();
  const cron = dialog.locator('input[aria-label="Cron expression"]');
  // a cron expression the server refuses: its one line, at once
  await cron.fill('61 3 * * *');
  await expect(dialog.locator('[data-field="schedule.preview"]')).toBeVisible();
  await cron.fill('0 3 * * *');
  await dialog.locator('input[aria-label="Time zone"]').fill('Europe/Berlin');
  const name = `nightly-${Date.now()}`;
  await dialog.locator('input[aria-label="Schedule name"]').fill(name);
  await expect(dialog.locator('ol[aria-label="Next runs"] li')).toHaveCount(5);
  await dialog.locator('.jp-Dialog-button.jp-mod-accept').click();
  // the sidebar's Schedules tab lists it; paused, then deleted
  const item = page.locator('.jp-Promote-scheduleItem').filter({ hasText: name });
  await expect(item).toBeVisible();
  await expect(item).toContainText('0 3 * * *');
  await expect(item).toContainText('Europe/Berlin');
  await item.locator('button:has-text("Pause")').click();
  await expect(item).toHaveAttribute('data-paused', 'true');
  await item.locator('button:has-text("Delete")').click();
  await page.locator('.jp-Dialog .jp-Dialog-button.jp-mod-accept').click();
  await expect(item).toHaveCount(0);
});
