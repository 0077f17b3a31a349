/**
 * The Promote dialog's extension point: a section another extension adds through
 * IPromoteDialogExtension renders in the form (after the built-in ones, whose fields keep the labels
 * the ui-tests select on) and contributes to the `POST jobs` request.
 */
import { ServerConnection } from '@jupyterlab/services';
import * as React from 'react';
import { renderToStaticMarkup } from 'react-dom/server';

import { PromoteService } from '../api/service';
import { PromoteForm } from '../dialog/PromoteForm';
import { PromoteDialogExtension } from '../dialog/registry';
import { emptyForm, IPromoteForm, toRequest } from '../form/form';
import { FieldError } from '../form/parse';
import { emptySchedule } from '../form/schedule';
import { useTranslation } from '../i18n';
import { IPromoteDialogSection, IPromoteSectionProps } from '../tokens';

/** A site's section: the dataset the notebook trains on, sent as its `dataset` parameter. */
function DatasetSection(props: IPromoteSectionProps<string>): JSX.Element {
  const trans = useTranslation(); // the dialog's bundle, as for its own sections
  return (
    <fieldset className="site-dataset">
      <legend>{trans.__('Dataset')}</legend>
      <label>
        {trans.__('Dataset on %1', props.form.target)}
        <input aria-label={trans.__('Dataset')} value={props.value} onChange={e => props.onChange(e.target.value)} />
      </label>
      {props.errors.dataset && <div role="alert">{props.errors.dataset}</div>}
    </fieldset>
  );
}

const DATASET: IPromoteDialogSection<string> = {
  id: 'dataset',
  initial: 'mnist',
  component: DatasetSection,
  contribute: (value, request) => {
    if (!/^[a-z0-9-]+$/.test(value)) {
      throw new FieldError('dataset', `${value}: not a dataset name`);
    }
    return { ...request, parameters: { ...request.parameters, dataset: value } };
  }
};

function render(form: IPromoteForm, sections: readonly IPromoteDialogSection[], errors = {}): string {
  const settings = ServerConnection.makeSettings({ baseUrl: 'http://localhost:8888/', wsUrl: 'ws://localhost:8888/' });
  return renderToStaticMarkup(
    <PromoteForm
      service={new PromoteService(settings)}
      notebook="train.ipynb"
      initial={{ form, preview: null, ownKernel: null, schedule: emptySchedule('UTC') }}
      errors={errors}
      sections={sections}
      onChange={() => undefined}
    />
  );
}

describe('IPromoteDialogExtension', () => {
  it('renders an added section after the built-in ones, with its initial value and the form', () => {
    const extension = new PromoteDialogExtension();
    extension.addSection(DATASET);
    const html = render(emptyForm('slurm', extension.sections), extension.sections);
    expect(html).toContain('<input aria-label="Dataset" value="mnist"/>');
    expect(html).toContain('Dataset on slurm');
    expect(html.indexOf('site-dataset')).toBeGreaterThan(html.indexOf('jp-Promote-environment'));
    expect(render(emptyForm('slurm'), [])).not.toContain('site-dataset');
  });

  it('shows the error its contribution raised under its own field', () => {
    const extension = new PromoteDialogExtension();
    extension.addSection(DATASET);
    const form = { ...emptyForm('local', extension.sections), sections: { dataset: 'No Such' } };
    let error: FieldError | null = null;
    try {
      toRequest('train.ipynb', form, [], extension.sections);
    } catch (e) {
      error = e as FieldError;
    }
    expect(error?.field).toBe('dataset');
    expect(render(form, extension.sections, { dataset: error!.message })).toContain(
      '<div role="alert">No Such: not a dataset name</div>'
    );
  });

  it('contributes its value to the request, its initial one when it was never edited', () => {
    const extension = new PromoteDialogExtension();
    extension.addSection(DATASET);
    const edited = { ...emptyForm('local', extension.sections), sections: { dataset: 'cifar-10' } };
    expect(toRequest('train.ipynb', edited, [], extension.sections)).toEqual({
      notebook: 'train.ipynb',
      target: 'local',
      parameters: { dataset: 'cifar-10' }
    });
    // a form from before the section was added (a dialog opened again) has no value for it yet
    expect(toRequest('train.ipynb', emptyForm('local'), [], extension.sections).parameters).toEqual({
      dataset: 'mnist'
    });
    expect(toRequest('train.ipynb', edited, []).parameters).toBeUndefined();
  });

  it('keeps sections in rank order, refuses a second id, and removes one when disposed', () => {
    const extension = new PromoteDialogExtension();
    let changes = 0;
    extension.changed.connect(() => changes++);
    const late = extension.addSection({ ...DATASET, id: 'late', rank: 200 });
    extension.addSection({ ...DATASET, id: 'early', rank: 1 });
    extension.addSection(DATASET);
    expect(extension.sections.map(s => s.id)).toEqual(['early', 'dataset', 'late']);
    expect(() => extension.addSection(DATASET)).toThrow('was added already');
    late.dispose();
    expect(extension.sections.map(s => s.id)).toEqual(['early', 'dataset']);
    expect(changes).toBe(4);
  });
});

describe('the Promote form', () => {
  it('keeps the labels, classes and field ids the ui-tests select on', () => {
    const html = render(emptyForm('local'), []);
    for (const label of [
      'Target',
      'Resource cpus',
      'Resource memory',
      'Resource gpus',
      'Resource time',
      'Stall timeout in seconds',
      'Action on NaN',
      'Deterministic',
      'Sweep values',
      'Sweep parallelism',
      'Replicas',
      'Seeds',
      'Contention',
      'Contention amount',
      'Kernel',
      'Secrets',
      'Data',
      'Retries'
    ]) {
      expect(html).toContain(`aria-label="${label}"`);
    }
    for (const name of ['target', 'kernel', 'parameters', 'resources', 'repeat', 'contention', 'environment']) {
      expect(html).toContain(`jp-Promote-${name}`);
    }
  });

  it('shows an error beside the field it concerns', () => {
    const html = render(emptyForm('local'), [], { 'resources.cpus': '0: must be a whole number of at least 1' });
    expect(html).toMatch(
      /aria-label="Resource cpus"[^>]*\/><\/label><div class="jp-Promote-fieldError" role="alert" data-field="resources.cpus">0: must be/
    );
  });
});

describe('secrets and retries in the form', () => {
  it('sends secrets by reference (a bare name is the server environment variable of that name) and retries', () => {
    const form = {
      ...emptyForm('kubernetes'),
      retries: '2',
      secrets: 'HF_TOKEN\n\nDB=file:/home/me/.db \n',
      data: 'train = s3://b/train\n'
    };
    expect(toRequest('train.ipynb', form, [])).toEqual({
      notebook: 'train.ipynb',
      target: 'kubernetes',
      retries: 2,
      secrets: { HF_TOKEN: 'env:HF_TOKEN', DB: 'file:/home/me/.db' },
      data: { train: 's3://b/train' }
    });
    expect(() => toRequest('t.ipynb', { ...emptyForm('local'), data: 'train' }, [])).toThrow(
      expect.objectContaining({ field: 'data' })
    );
    expect(toRequest('train.ipynb', emptyForm('local'), [])).toEqual({ notebook: 'train.ipynb', target: 'local' });
  });

  it('refuses a name that is no variable and a retry count that is no whole number, beside their fields', () => {
    expect(() => toRequest('t.ipynb', { ...emptyForm('local'), secrets: 'my-token=env:X' }, [])).toThrow(
      expect.objectContaining({ field: 'secrets' })
    );
    expect(() => toRequest('t.ipynb', { ...emptyForm('local'), retries: '-1' }, [])).toThrow(
      expect.objectContaining({ field: 'retries' })
    );
  });
});
