/**
 * galata (Playwright) against a real JupyterLab with jupyter-promote installed, in Debian's chromium:
 * no browser download works on CI machines, and video/trace need ffmpeg, which cannot be fetched.
 */
const baseConfig = require('@jupyterlab/galata/lib/playwright-config');

module.exports = {
  ...baseConfig,
  testDir: './tests',
  reporter: [['list'], ['html', { open: 'never' }]],
  timeout: 180000,
  expect: { timeout: 60000 },
  retries: 0,
  workers: 1,
  use: {
    ...baseConfig.use,
    video: 'off',
    trace: 'off',
    launchOptions: {
      executablePath: process.env.PROMOTE_CHROMIUM || '/usr/bin/chromium',
      args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update']
    }
  },
  webServer: {
    // the server's log is an artifact beside the screenshots, not noise in the test output
    command: 'mkdir -p artifacts && jlpm start > artifacts/jupyter-lab.log 2>&1',
    url: 'http://localhost:8888/lab',
    timeout: 180000,
    reuseExistingServer: !process.env.CI
  }
};
