/**
 * The extension's settings (schema/plugin.json): the dialog's default target, and whether the job
 * list shows finished jobs. Applied once loaded and again on every change; a failure to load is logged.
 */
import { ISettingRegistry } from '@jupyterlab/settingregistry';

/** The settings as the extension uses them. */
export interface IPromoteSettings {
  /** The target the dialog starts on ('local' when unset). */
  defaultTarget: string;
  showFinished: boolean;
}

/** Call `apply` with the plugin's settings once loaded, then on every change. */
export function followSettings(
  registry: ISettingRegistry,
  pluginId: string,
  apply: (settings: IPromoteSettings) => void
): void {
  registry
    .load(pluginId)
    .then(settings => {
      const update = () =>
        apply({
          defaultTarget: (settings.get('defaultTarget').composite as string) || 'local',
          showFinished: settings.get('showFinished').composite as boolean
        });
      update();
      settings.changed.connect(update);
    })
    .catch(reason => console.error(`jupyter-promote: cannot load its settings: ${reason}`));
}
