/**
 * The job list's live connection: the first load of the jobs (a server extension that does not answer
 * is said so), and a notification when a job ends or raises an alert, with a button that shows it.
 */
import { Notification } from '@jupyterlab/apputils';
import { TranslationBundle } from '@jupyterlab/translation';

import type { IJobNews, JobsModel } from '../jobs';

/** Notify each job's news, then load the jobs. */
export function followJobs(model: JobsModel, trans: TranslationBundle, show: (id: string) => void): void {
  model.news.connect((_, news) => notifyNews(news, trans, show));
  model.refresh().catch(reason => {
    console.error(`jupyter-promote: the server extension did not answer: ${reason}`);
    Notification.error(
      trans.__('jupyter-promote: the server extension did not answer (%1)', (reason as Error).message)
    );
  });
}

/** One notification for an alert or a job's end; how long it stays depends on how much it matters. */
function notifyNews(news: IJobNews, trans: TranslationBundle, show: (id: string) => void): void {
  const name = news.view.record.notebook.split('/').pop();
  const actions = [{ label: trans.__('Show'), callback: () => show(news.view.id) }];
  if (news.kind === 'alert') {
    Notification.warning(trans.__('%1: %2 alert: %3', name, news.event.kind, news.event.message), {
      actions,
      autoClose: 8000
    });
  } else if (news.view.state === 'succeeded') {
    Notification.success(trans.__('%1 succeeded on %2', name, news.view.record.target), {
      actions,
      autoClose: 6000
    });
  } else if (news.view.state === 'failed') {
    Notification.error(trans.__('%1 failed: %2 %3', name, news.view.reason ?? '', news.view.message ?? '').trim(), {
      actions,
      autoClose: false
    });
  } else {
    Notification.info(trans.__('%1 was cancelled', name), { actions, autoClose: 4000 });
  }
}
