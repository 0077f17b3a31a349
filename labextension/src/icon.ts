import { LabIcon } from '@jupyterlab/ui-components';

/** A rocket over a rack: the notebook going to the cluster. */
export const promoteIcon = new LabIcon({
  name: 'jupyter-promote:promote',
  svgstr:
    '<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 24 24">' +
    '<g class="jp-icon3" fill="#616161">' +
    '<path d="M12 2c2.8 1.6 4.5 4.6 4.5 8v3.2l1.8 2.3-1.3 1.5h-2.6l-.6 1.5h-3.6l-.6-1.5H7l-1.3-1.5 1.8-2.3V10' +
    'c0-3.4 1.7-6.4 4.5-8zm0 5.2a1.8 1.8 0 1 0 0 3.6 1.8 1.8 0 0 0 0-3.6z"/>' +
    '<path d="M9.5 20h5l-1 2h-3z"/></g></svg>'
});
