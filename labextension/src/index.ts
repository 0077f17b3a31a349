import {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';

import { requestAPI } from './request';

/** A target as `GET /jupyter-promote/targets` describes it. */
export interface ITarget {
  name: string;
  display_name: string;
  available: boolean;
  reason: string | null;
}

/**
 * The jupyter-promote plugin. For now it checks that the server extension answers;
 * the "Promote to cluster" button and the sidebar build on it.
 */
const plugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-promote:plugin',
  description: 'Promote a notebook to a cluster job that behaves the same way.',
  autoStart: true,
  activate: (app: JupyterFrontEnd) => {
    requestAPI<{ targets: ITarget[] }>('targets', {}, app.serviceManager.serverSettings)
      .then(data => {
        const names = data.targets.map(t => t.name).join(', ');
        console.log(`jupyter-promote is activated; targets: ${names}`);
      })
      .catch(reason => {
        console.error(`jupyter-promote: the server extension did not answer.\n${reason}`);
      });
  }
};

export default plugin;
