/**
 * galata against the rig (scripts/rig.sh): JupyterLab run by an unprivileged user from the installed wheel,
 * started in a project folder below their home directory, the notebook on the user's own kernel.
 */
const base = require('./playwright.config');

const PORT = 8899;

module.exports = {
  ...base,
  testDir: './rig',
  use: { ...base.use, baseURL: `http://localhost:${PORT}` },
  webServer: {
    command: `mkdir -p artifacts && bash ../scripts/rig-lab.sh ${PORT} > artifacts/jupyter-lab-rig.log 2>&1`,
    url: `http://localhost:${PORT}/lab`,
    timeout: 180000,
    reuseExistingServer: false,
    // the script stops the user's server on SIGTERM (the default SIGKILL would leave it running)
    gracefulShutdown: { signal: 'SIGTERM', timeout: 15000 }
  }
};
