/**
 * The Promote dialog's sections that make a group of jobs of one request: a sweep, replicas and
 * seeds, a contention test; and the environment section (kernel and the freeze preview's card).
 */

import * as React from 'react';

import { ContentionKind } from '../form/fields';
import { kernelChoice, kernelOptions } from '../form/choices';
import { useTranslation } from '../i18n';
import { EnvironmentCard, IPreviewState } from '../preview';
import { SelectField, TextAreaField, TextField } from './fields';
import { ISectionProps } from './sections';

/** One job per combination of parameter values, and how many run at once. */
export function SweepSection(props: ISectionProps): JSX.Element {
  const trans = useTranslation();
  const { form, errors } = props;
  return (
    <fieldset>
      <legend>{trans.__('Sweep (optional)')}</legend>
      <TextAreaField
        field="sweep"
        errors={errors}
        ariaLabel={trans.__('Sweep values')}
        placeholder={trans.__('one line per parameter, e.g.\nlr = 0.1, 0.01\nseed = 0, 1')}
        rows={2}
        value={form.sweep}
        onChange={sweep => props.update({ sweep })}
      />
      <TextField
        field="max_parallel"
        errors={errors}
        label={trans.__('At most running at once')}
        ariaLabel={trans.__('Sweep parallelism')}
        placeholder={trans.__('all')}
        value={form.max_parallel}
        onChange={value => props.update({ max_parallel: value })}
      />
    </fieldset>
  );
}

/** The same job several times (replicas), once per seed, or both. */
export function RepeatSection(props: ISectionProps): JSX.Element {
  const trans = useTranslation();
  const { form, errors } = props;
  return (
    <fieldset className="jp-Promote-repeat">
      <legend>{trans.__('Replicas and seeds (optional)')}</legend>
      <TextField
        field="replicas"
        errors={errors}
        label={trans.__('Replicas')}
        ariaLabel={trans.__('Replicas')}
        inputTitle={trans.__('Run the same job this many times, to see whether its results repeat')}
        placeholder="1"
        value={form.replicas}
        onChange={replicas => props.update({ replicas })}
      />
      <TextField
        field="seeds"
        errors={errors}
        label={trans.__('Seeds')}
        ariaLabel={trans.__('Seeds')}
        inputTitle={trans.__('One job per seed, e.g. 0, 1, 2')}
        placeholder={trans.__('e.g. 0, 1, 2')}
        value={form.seeds}
        onChange={seeds => props.update({ seeds })}
      />
    </fieldset>
  );
}

/** The job alone and beside a stress workload: its kind and amount (one error for both). */
export function ContentionSection(props: ISectionProps): JSX.Element {
  const trans = useTranslation();
  const { form, errors } = props;
  const { kind } = form.contention;
  return (
    <fieldset className="jp-Promote-contention">
      <legend>{trans.__('Contention test (optional)')}</legend>
      <SelectField<ContentionKind>
        errors={errors}
        label={trans.__('Stress beside the job')}
        ariaLabel={trans.__('Contention')}
        value={kind}
        onChange={value => props.update({ contention: { ...form.contention, kind: value } })}
      >
        <option value="">{trans.__('none')}</option>
        <option value="cpu">{trans.__('CPU burners')}</option>
        <option value="memory">{trans.__('memory pressure')}</option>
        <option value="gpu">{trans.__('GPU load')}</option>
      </SelectField>
      <TextField
        field="contention"
        errors={errors}
        label={kind === 'memory' ? trans.__('Memory held') : trans.__('Burners')}
        ariaLabel={trans.__('Contention amount')}
        placeholder={
          kind === 'memory'
            ? trans.__('e.g. 1G (default: half of what is free)')
            : trans.__('e.g. 4 (default: one per CPU)')
        }
        disabled={kind !== 'cpu' && kind !== 'memory'}
        value={form.contention.amount}
        onChange={amount => props.update({ contention: { ...form.contention, amount } })}
      />
    </fieldset>
  );
}

/**
 * The kernel to run with (the notebook's own unless another is picked), and the environment it
 * freezes; a preview problem no form field shows is shown here.
 */
export function EnvironmentSection(
  props: ISectionProps & { previewed: IPreviewState; previewField: string }
): JSX.Element {
  const trans = useTranslation();
  const { form, errors, previewed } = props;
  const { preview, loading } = previewed;
  const ownKernel = previewed.own ?? preview?.kernel ?? null;
  const kernel = form.kernel || ownKernel || '';
  return (
    <fieldset className="jp-Promote-environment">
      <legend>{trans.__('Environment')}</legend>
      <SelectField
        field="kernel"
        errors={errors}
        label={trans.__('Kernel')}
        className="jp-Promote-kernel"
        ariaLabel={trans.__('Kernel')}
        value={kernel}
        disabled={preview === null}
        onChange={value => props.update({ kernel: kernelChoice(value, ownKernel) })}
      >
        {kernelOptions(preview?.kernels ?? [], ownKernel, kernel).map(k => (
          <option key={k.name} value={k.name}>
            {k.display_name}
            {k.name === ownKernel ? trans.__(" (the notebook's)") : ''}
          </option>
        ))}
      </SelectField>
      {previewed.problem && !props.previewField && (
        <div className="jp-Promote-fieldError" role="alert" data-field="environment">
          {previewed.problem}
        </div>
      )}
      <EnvironmentCard preview={preview} loading={loading} />
    </fieldset>
  );
}
