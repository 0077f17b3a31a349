/**
 * The built-in sections of the Promote dialog, each a fieldset of field components: the target, the
 * notebook's parameters, resources, monitoring and the notification destinations.
 */

import * as React from 'react';

import { INotifyDestination, IParameter, ITarget } from '../api/types';
import { NanAction, RESOURCE_NAMES, ResourceName } from '../form/fields';
import { IPromoteForm } from '../form/form';
import { useTranslation } from '../i18n';
import { CheckboxField, FieldErrorMessage, FieldErrors, SelectField, TextAreaField, TextField } from './fields';

/** What every section is given: the form, a way to change it, and the errors by field. */
export interface ISectionProps {
  form: IPromoteForm;
  update: (change: Partial<IPromoteForm>) => void;
  errors: FieldErrors;
}

/** Where the job runs: the targets the server offers (unavailable ones disabled, with their reason). */
export function TargetSection(props: ISectionProps & { targets: ITarget[] | null }): JSX.Element {
  const trans = useTranslation();
  const { form } = props;
  const targets = props.targets ?? [{ name: form.target, display_name: form.target, available: true, reason: null }];
  return (
    <fieldset>
      <legend>{trans.__('Target')}</legend>
      <SelectField
        field="target"
        errors={props.errors}
        label={trans.__('Run on')}
        className="jp-Promote-target"
        ariaLabel={trans.__('Target')}
        value={form.target}
        onChange={target => props.update({ target })}
      >
        {targets.map(t => (
          <option key={t.name} value={t.name} disabled={!t.available} title={t.reason ?? ''}>
            {t.display_name}
            {t.available ? '' : trans.__(' (unavailable: %1)', t.reason ?? '')}
          </option>
        ))}
      </SelectField>
    </fieldset>
  );
}

/** The notebook's parameters (its `parameters` cell), each filled with its default until edited. */
export function ParametersSection(props: ISectionProps & { parameters: IParameter[] | null }): JSX.Element {
  const trans = useTranslation();
  const { form } = props;
  return (
    <fieldset className="jp-Promote-parameters">
      <legend>{trans.__('Parameters')}</legend>
      {props.parameters === null && <div className="jp-Promote-muted">{trans.__('reading the notebook…')}</div>}
      {props.parameters?.length === 0 && (
        <div className="jp-Promote-muted">{trans.__('no cell tagged "parameters"')}</div>
      )}
      {props.parameters?.map(p => (
        <div key={p.name}>
          <TextField
            field={`parameters.${p.name}`}
            errors={props.errors}
            title={p.help || trans.__('default: %1', p.default)}
            label={
              <>
                <code>{p.name}</code> <span className="jp-Promote-muted">{p.type}</span>
              </>
            }
            ariaLabel={trans.__('Parameter %1', p.name)}
            data={{ 'data-parameter': p.name }}
            value={form.parameters[p.name] ?? ''}
            onChange={value => props.update({ parameters: { ...form.parameters, [p.name]: value } })}
          />
        </div>
      ))}
      <FieldErrorMessage errors={props.errors} field="parameters" />
    </fieldset>
  );
}

const RESOURCE_PLACEHOLDERS: Record<ResourceName, string> = { cpus: '1', memory: '4G', gpus: '0', time: '2h' };

/** What the job asks of the target: each resource the schema has (those the target does not offer disabled). */
export function ResourcesSection(props: ISectionProps & { target: ITarget | undefined }): JSX.Element {
  const trans = useTranslation();
  const { form, target } = props;
  const offered = new Set(Object.keys(target?.options_schema?.properties ?? {}));
  const labels: Record<ResourceName, string> = {
    cpus: trans.__('CPUs'),
    memory: trans.__('Memory'),
    gpus: trans.__('GPUs'),
    time: trans.__('Time limit')
  };
  return (
    <fieldset className="jp-Promote-resources">
      <legend>{trans.__('Resources')}</legend>
      {RESOURCE_NAMES.map(name => (
        <div key={name}>
          <TextField
            field={`resources.${name}`}
            errors={props.errors}
            title={target?.options_schema?.properties?.[name]?.description ?? ''}
            label={labels[name]}
            ariaLabel={trans.__('Resource %1', name)}
            placeholder={RESOURCE_PLACEHOLDERS[name]}
            disabled={target !== undefined && offered.size > 0 && !offered.has(name)}
            value={form.resources[name]}
            onChange={value => props.update({ resources: { ...form.resources, [name]: value } })}
          />
        </div>
      ))}
      <FieldErrorMessage errors={props.errors} field="resources" />
    </fieldset>
  );
}

/** How the in-job monitor watches the run, and whether it runs deterministically. */
export function MonitoringSection(props: ISectionProps): JSX.Element {
  const trans = useTranslation();
  const { form, errors } = props;
  return (
    <fieldset>
      <legend>{trans.__('Monitoring')}</legend>
      <TextField
        field="monitor.stall_timeout_s"
        errors={errors}
        label={trans.__('Stall timeout (s)')}
        ariaLabel={trans.__('Stall timeout in seconds')}
        placeholder="600"
        value={form.monitor.stall_timeout_s}
        onChange={value => props.update({ monitor: { ...form.monitor, stall_timeout_s: value } })}
      />
      <SelectField<NanAction>
        field="monitor.nan_action"
        errors={errors}
        label={trans.__('On NaN/Inf')}
        ariaLabel={trans.__('Action on NaN')}
        value={form.monitor.nan_action}
        onChange={value => props.update({ monitor: { ...form.monitor, nan_action: value } })}
      >
        <option value="">{trans.__("the server's default")}</option>
        <option value="fail">{trans.__('fail the job')}</option>
        <option value="alert">{trans.__('alert and go on')}</option>
      </SelectField>
      <FieldErrorMessage errors={errors} field="monitor" />
      <CheckboxField
        field="deterministic"
        errors={errors}
        label={trans.__('Deterministic (seed, deterministic algorithms)')}
        ariaLabel={trans.__('Deterministic')}
        checked={form.deterministic}
        onChange={deterministic => props.update({ deterministic })}
      />
    </fieldset>
  );
}

/** Secrets by reference, and attempts when the infrastructure fails the job. */
export function ReliabilitySection(props: ISectionProps): JSX.Element {
  const trans = useTranslation();
  const { form, errors } = props;
  return (
    <fieldset>
      <legend>{trans.__('Secrets, data and retries')}</legend>
      <TextAreaField
        field="secrets"
        errors={errors}
        ariaLabel={trans.__('Secrets')}
        placeholder={trans.__(
          'HF_TOKEN\nDB_PASSWORD=file:/home/me/.db-password\nWANDB_API_KEY=kubernetes:wandb/api-key'
        )}
        rows={2}
        value={form.secrets}
        onChange={secrets => props.update({ secrets })}
      />
      <TextAreaField
        field="data"
        errors={errors}
        ariaLabel={trans.__('Data')}
        placeholder={trans.__('train=s3://bucket/datasets/train')}
        rows={1}
        value={form.data}
        onChange={data => props.update({ data })}
      />
      <TextField
        field="retries"
        errors={errors}
        label={trans.__('Retries')}
        title={trans.__('Start the job again when the infrastructure fails it (preempted, evicted, a lost node)')}
        ariaLabel={trans.__('Retries')}
        placeholder="0"
        value={form.retries}
        onChange={retries => props.update({ retries })}
      />
    </fieldset>
  );
}

/** Who is told when the job ends: the destinations the server offers, ticked by name (none offered: no section). */
export function NotifySection(props: ISectionProps & { destinations: INotifyDestination[] }): JSX.Element | null {
  const trans = useTranslation();
  const { form, destinations } = props;
  if (destinations.length === 0) {
    return null;
  }
  const tick = (name: string, checked: boolean) => {
    const ticked = new Set(form.notify ?? []);
    if (checked) {
      ticked.add(name);
    } else {
      ticked.delete(name);
    }
    props.update({ notify: destinations.map(x => x.name).filter(n => ticked.has(n)) });
  };
  return (
    <fieldset className="jp-Promote-notify">
      <legend>{trans.__('Notify')}</legend>
      {destinations.map(d => (
        <CheckboxField
          key={d.name}
          errors={props.errors}
          title={trans.__('told of: %1', d.on.join(', '))}
          label={
            <>
              {d.name} <span className="jp-Promote-muted">{d.kind}</span>
            </>
          }
          ariaLabel={trans.__('Notify %1', d.name)}
          data={{ 'data-destination': d.name }}
          checked={form.notify?.includes(d.name) ?? false}
          onChange={checked => tick(d.name, checked)}
        />
      ))}
      <FieldErrorMessage errors={props.errors} field="notify" />
    </fieldset>
  );
}
