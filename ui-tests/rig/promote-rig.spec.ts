/**
 * The button as a user has it (the rig: scripts/rig.sh and scripts/rig-lab.sh): JupyterLab run by an
 * unprivileged user from the installed wheel, started in `~/rig lab ñ é`, the notebook on the user's own
 * kernel. Promote from the notebook toolbar to local, Docker, Slurm, Ray and Kubernetes; each job succeeds and lists the files
 * it wrote beside the notebook's inputs.
 */
import { expect, IJupyterLabPageFixture, test } from '@jupyterlab/galata';
import * as fs from 'fs';
import * as path from 'path';

const ARTIFACTS = path.resolve(__dirname, '..', 'artifacts');
const PROJECT = path.resolve(__dirname, '..', '..', 'tests', 'notebooks', 'project');

/** The project's files, uploaded through the user's server (so the user owns them), the notebook on the user's kernel. */
async function uploadProject(page: IJupyterLabPageFixture, tmpPath: string): Promise<void> {
  await page.contents.uploadDirectory(PROJECT, tmpPath);
  const nb = JSON.parse(fs.readFileSync(path.join(PROJECT, 'files.ipynb'), 'utf-8'));
  nb.metadata.kernelspec = { name: 'project-kernel', display_name: 'Project (venv)', language: 'python' };
  await page.contents.uploadContent(JSON.stringify(nb), 'text', `${tmpPath}/files.ipynb`);
  await page.filebrowser.refresh();
}

test.use({ autoGoto: true });

async function promoteFromToolbar(page: IJupyterLabPageFixture, target: string): Promise<void> {
  await page.locator('.jp-NotebookPanel-toolbar [data-jp-item-name="promote"] .jp-ToolbarButtonComponent').click();
  const dialog = page.locator('.jp-Dialog');
  await expect(dialog.locator('.jp-Promote-form')).toBeVisible();
  await expect(dialog.locator('.jp-Promote-image')).toBeVisible({ timeout: 120000 });
  // the notebook's own kernel is offered, and the pre-flight check has nothing to say about this notebook
  await expect(dialog.locator('select.jp-Promote-kernel')).toHaveValue('project-kernel');
  await expect(dialog.locator('[aria-label="Pre-flight checks"]')).toContainText('nothing to report');
  await dialog.locator('select.jp-Promote-target').selectOption(target);
  await dialog.locator('input[data-parameter="scale"]').fill('2');
  await dialog.locator('.jp-Dialog-button.jp-mod-accept').click();
}

for (const target of ['local', 'docker', 'slurm', 'ray', 'kubernetes']) {
  test(`promote a notebook with files beside it to ${target} as a normal user`, async ({ page, tmpPath }) => {
    test.setTimeout(600000);
    await uploadProject(page, tmpPath);
    await page.notebook.openByPath(`${tmpPath}/files.ipynb`);
    await page.notebook.activate('files.ipynb');
    await promoteFromToolbar(page, target);
    const detail = page.locator('.jp-Promote-detail');
    await expect(detail).toBeVisible();
    const badge = page.locator('.jp-Promote-detail .jp-Promote-detailHeader [data-state]');
    await expect(badge).toHaveAttribute('data-state', 'succeeded', { timeout: 480000 });
    await expect(page.locator('.jp-Promote-metrics')).toContainText('13');
    const artifacts = page.locator('.jp-Promote-artifacts');
    await expect(artifacts).toContainText('result.txt');
    await expect(artifacts).toContainText('out/summary.json');
    await page.screenshot({ path: path.join(ARTIFACTS, `rig-${target}.png`) });
  });
}
