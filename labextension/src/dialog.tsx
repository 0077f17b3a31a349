import { Dialog, showDialog } from '@jupyterlab/apputils';
import { TranslationBundle } from '@jupyterlab/translation';
import { ReactWidget } from '@jupyterlab/ui-components';
import * as React from 'react';

import {
  ContentionKind,
  emptyForm,
  IPromoteForm,
  kernelChoice,
  kernelOptions,
  notifyChoice,
  requestedGpus
} from './form';
import { TranslationContext, useTranslation } from './i18n';
import { parameterText } from './model';
import { EnvironmentCard, PreflightChecks, usePreview } from './preview';
import { PromoteService } from './service';
import { IFreezePreview, INotifyDestination, IParameter, ITarget } from './tokens';

/** What the dialog returns: the form, and what the server said of the notebook (its parameters, its own kernel). */
export interface IPromoteChoice {
  form: IPromoteForm;
  preview: IFreezePreview | null;
  /** The notebook's own kernelspec, once a preview has said it. */
  ownKernel: string | null;
}

interface IFormProps {
  service: PromoteService;
  notebook: string;
  initial: IPromoteChoice;
  errors: Record<string, string>;
  onChange: (choice: IPromoteChoice) => void;
}

function FieldError(props: { errors: Record<string, string>; field: string }): JSX.Element | null {
  const message = props.errors[props.field];
  return message ? (
    <div className="jp-Promote-fieldError" role="alert" data-field={props.field}>
      {message}
    </div>
  ) : null;
}

/** The parameters' fields filled with the notebook's defaults, keeping what was typed already. */
function withDefaults(values: Record<string, string>, parameters: IParameter[]): Record<string, string> {
  const filled = { ...values };
  for (const p of parameters) {
    if (!(p.name in filled)) {
      filled[p.name] = p.literal && p.type === 'str' ? parameterText(p.type, p.value) : p.default;
    }
  }
  return filled;
}

/**
 * The form of the "Promote to cluster" dialog: pre-flight checks, target, parameters, resources,
 * monitor, sweep, kernel and environment.
 */
function PromoteFormView(props: IFormProps): JSX.Element {
  const trans = useTranslation();
  const [form, setForm] = React.useState<IPromoteForm>(props.initial.form);
  const [targets, setTargets] = React.useState<ITarget[] | null>(null);
  const [problem, setProblem] = React.useState<string | null>(null);
  const [destinations, setDestinations] = React.useState<INotifyDestination[]>([]);
  const initial = { preview: props.initial.preview, own: props.initial.ownKernel };
  const previewed = usePreview(props.service, props.notebook, form.kernel, requestedGpus(form), form.target, initial);
  const { preview, own, loading } = previewed;

  React.useEffect(() => {
    props.service
      .targets()
      .then(found => {
        setTargets(found);
        // the configured default may not be offered here: take the first target that is available
        setForm(f =>
          found.some(t => t.name === f.target && t.available)
            ? f
            : { ...f, target: found.find(t => t.available)?.name ?? f.target }
        );
      })
      .catch(e => setProblem(trans.__('targets: %1', e.message)));
    props.service
      .notifications()
      .then(offered => {
        setDestinations(offered.destinations);
        setForm(f => ({ ...f, notify: notifyChoice(f.notify, offered) }));
      })
      .catch(e => setProblem(trans.__('notification destinations: %1', e.message)));
  }, []);
  React.useEffect(() => {
    if (preview) {
      setForm(f => ({ ...f, parameters: withDefaults(f.parameters, preview.parameters) }));
    }
  }, [preview]);
  React.useEffect(() => {
    props.onChange({ form, preview, ownKernel: own });
  }, [form, preview, own]);

  const update = (change: Partial<IPromoteForm>) => setForm(f => ({ ...f, ...change }));
  const target = targets?.find(t => t.name === form.target);
  const offered = new Set(Object.keys(target?.options_schema?.properties ?? {}));
  // a preview refused for a field of the form (the GPU count) shows there; the server's answer to Promote wins
  const previewField = previewed.problem ? previewed.problemField : '';
  const errors = previewField ? { [previewField]: previewed.problem!, ...props.errors } : props.errors;
  const ownKernel = own ?? preview?.kernel ?? null;
  const kernel = form.kernel || ownKernel || '';

  return (
    <div className="jp-Promote-form">
      <PreflightChecks preview={preview} loading={loading} />
      {errors[''] && (
        <div className="jp-Promote-fieldError" role="alert" data-field="">
          {errors['']}
        </div>
      )}
      {problem && (
        <div className="jp-Promote-fieldError" role="alert">
          {problem}
        </div>
      )}
      <fieldset>
        <legend>{trans.__('Target')}</legend>
        <label>
          {trans.__('Run on')}
          <select
            className="jp-mod-styled jp-Promote-target"
            aria-label={trans.__('Target')}
            value={form.target}
            onChange={e => update({ target: e.target.value })}
          >
            {(targets ?? [{ name: form.target, display_name: form.target, available: true, reason: null }]).map(t => (
              <option key={t.name} value={t.name} disabled={!t.available} title={t.reason ?? ''}>
                {t.display_name}
                {t.available ? '' : trans.__(' (unavailable: %1)', t.reason ?? '')}
              </option>
            ))}
          </select>
        </label>
        <FieldError errors={errors} field="target" />
      </fieldset>

      <fieldset className="jp-Promote-parameters">
        <legend>{trans.__('Parameters')}</legend>
        {preview === null && <div className="jp-Promote-muted">{trans.__('reading the notebook…')}</div>}
        {preview !== null && preview.parameters.length === 0 && (
          <div className="jp-Promote-muted">{trans.__('no cell tagged "parameters"')}</div>
        )}
        {preview?.parameters.map(p => (
          <div key={p.name}>
            <label title={p.help || trans.__('default: %1', p.default)}>
              <code>{p.name}</code> <span className="jp-Promote-muted">{p.type}</span>
              <input
                className="jp-mod-styled"
                aria-label={trans.__('Parameter %1', p.name)}
                data-parameter={p.name}
                value={form.parameters[p.name] ?? ''}
                onChange={e => update({ parameters: { ...form.parameters, [p.name]: e.target.value } })}
              />
            </label>
            <FieldError errors={errors} field={`parameters.${p.name}`} />
          </div>
        ))}
        <FieldError errors={errors} field="parameters" />
      </fieldset>

      <fieldset className="jp-Promote-resources">
        <legend>{trans.__('Resources')}</legend>
        {(['cpus', 'memory', 'gpus', 'time'] as const).map(name => (
          <div key={name}>
            <label title={target?.options_schema?.properties?.[name]?.description ?? ''}>
              {
                {
                  cpus: trans.__('CPUs'),
                  memory: trans.__('Memory'),
                  gpus: trans.__('GPUs'),
                  time: trans.__('Time limit')
                }[name]
              }
              <input
                className="jp-mod-styled"
                aria-label={trans.__('Resource %1', name)}
                placeholder={{ cpus: '1', memory: '4G', gpus: '0', time: '2h' }[name]}
                disabled={target !== undefined && offered.size > 0 && !offered.has(name)}
                value={form.resources[name]}
                onChange={e => update({ resources: { ...form.resources, [name]: e.target.value } })}
              />
            </label>
            <FieldError errors={errors} field={`resources.${name}`} />
          </div>
        ))}
        <FieldError errors={errors} field="resources" />
      </fieldset>

      <fieldset>
        <legend>{trans.__('Monitoring')}</legend>
        <label>
          {trans.__('Stall timeout (s)')}
          <input
            className="jp-mod-styled"
            aria-label={trans.__('Stall timeout in seconds')}
            placeholder="600"
            value={form.monitor.stall_timeout_s}
            onChange={e => update({ monitor: { ...form.monitor, stall_timeout_s: e.target.value } })}
          />
        </label>
        <FieldError errors={errors} field="monitor.stall_timeout_s" />
        <label>
          {trans.__('On NaN/Inf')}
          <select
            className="jp-mod-styled"
            aria-label={trans.__('Action on NaN')}
            value={form.monitor.nan_action}
            onChange={e =>
              update({ monitor: { ...form.monitor, nan_action: e.target.value as '' | 'fail' | 'alert' } })
            }
          >
            <option value="">{trans.__("the server's default")}</option>
            <option value="fail">{trans.__('fail the job')}</option>
            <option value="alert">{trans.__('alert and go on')}</option>
          </select>
        </label>
        <FieldError errors={errors} field="monitor.nan_action" />
        <FieldError errors={errors} field="monitor" />
        <label className="jp-Promote-checkbox">
          <input
            type="checkbox"
            aria-label={trans.__('Deterministic')}
            checked={form.deterministic}
            onChange={e => update({ deterministic: e.target.checked })}
          />
          {trans.__('Deterministic (seed, deterministic algorithms)')}
        </label>
        <FieldError errors={errors} field="deterministic" />
      </fieldset>

      {destinations.length > 0 && (
        <fieldset className="jp-Promote-notify">
          <legend>{trans.__('Notify')}</legend>
          {destinations.map(d => (
            <label key={d.name} className="jp-Promote-checkbox" title={trans.__('told of: %1', d.on.join(', '))}>
              <input
                type="checkbox"
                aria-label={trans.__('Notify %1', d.name)}
                data-destination={d.name}
                checked={form.notify?.includes(d.name) ?? false}
                onChange={e => {
                  const ticked = new Set(form.notify ?? []);
                  if (e.target.checked) {
                    ticked.add(d.name);
                  } else {
                    ticked.delete(d.name);
                  }
                  update({ notify: destinations.map(x => x.name).filter(name => ticked.has(name)) });
                }}
              />
              {d.name} <span className="jp-Promote-muted">{d.kind}</span>
            </label>
          ))}
          <FieldError errors={errors} field="notify" />
        </fieldset>
      )}

      <fieldset>
        <legend>{trans.__('Sweep (optional)')}</legend>
        <textarea
          className="jp-mod-styled"
          aria-label={trans.__('Sweep values')}
          placeholder={trans.__('one line per parameter, e.g.\nlr = 0.1, 0.01\nseed = 0, 1')}
          rows={2}
          value={form.sweep}
          onChange={e => update({ sweep: e.target.value })}
        />
        <FieldError errors={errors} field="sweep" />
        <label>
          {trans.__('At most running at once')}
          <input
            className="jp-mod-styled"
            aria-label={trans.__('Sweep parallelism')}
            placeholder={trans.__('all')}
            value={form.maxParallel}
            onChange={e => update({ maxParallel: e.target.value })}
          />
        </label>
        <FieldError errors={errors} field="max_parallel" />
      </fieldset>

      <fieldset className="jp-Promote-repeat">
        <legend>{trans.__('Replicas and seeds (optional)')}</legend>
        <label>
          {trans.__('Replicas')}
          <input
            className="jp-mod-styled"
            aria-label={trans.__('Replicas')}
            title={trans.__('Run the same job this many times, to see whether its results repeat')}
            placeholder="1"
            value={form.replicas}
            onChange={e => update({ replicas: e.target.value })}
          />
        </label>
        <FieldError errors={errors} field="replicas" />
        <label>
          {trans.__('Seeds')}
          <input
            className="jp-mod-styled"
            aria-label={trans.__('Seeds')}
            title={trans.__('One job per seed, e.g. 0, 1, 2')}
            placeholder={trans.__('e.g. 0, 1, 2')}
            value={form.seeds}
            onChange={e => update({ seeds: e.target.value })}
          />
        </label>
        <FieldError errors={errors} field="seeds" />
      </fieldset>

      <fieldset className="jp-Promote-contention">
        <legend>{trans.__('Contention test (optional)')}</legend>
        <label>
          {trans.__('Stress beside the job')}
          <select
            className="jp-mod-styled"
            aria-label={trans.__('Contention')}
            value={form.contention.kind}
            onChange={e => update({ contention: { ...form.contention, kind: e.target.value as ContentionKind } })}
          >
            <option value="">{trans.__('none')}</option>
            <option value="cpu">{trans.__('CPU burners')}</option>
            <option value="memory">{trans.__('memory pressure')}</option>
            <option value="gpu">{trans.__('GPU load')}</option>
          </select>
        </label>
        <label>
          {form.contention.kind === 'memory' ? trans.__('Memory held') : trans.__('Burners')}
          <input
            className="jp-mod-styled"
            aria-label={trans.__('Contention amount')}
            placeholder={
              form.contention.kind === 'memory'
                ? trans.__('e.g. 1G (default: half of what is free)')
                : trans.__('e.g. 4 (default: one per CPU)')
            }
            disabled={form.contention.kind !== 'cpu' && form.contention.kind !== 'memory'}
            value={form.contention.amount}
            onChange={e => update({ contention: { ...form.contention, amount: e.target.value } })}
          />
        </label>
        <FieldError errors={errors} field="contention" />
      </fieldset>

      <fieldset className="jp-Promote-environment">
        <legend>{trans.__('Environment')}</legend>
        <label>
          {trans.__('Kernel')}
          <select
            className="jp-mod-styled jp-Promote-kernel"
            aria-label={trans.__('Kernel')}
            value={kernel}
            disabled={preview === null}
            onChange={e => update({ kernel: kernelChoice(e.target.value, ownKernel) })}
          >
            {kernelOptions(preview?.kernels ?? [], ownKernel, kernel).map(k => (
              <option key={k.name} value={k.name}>
                {k.display_name}
                {k.name === ownKernel ? trans.__(" (the notebook's)") : ''}
              </option>
            ))}
          </select>
        </label>
        <FieldError errors={errors} field="kernel" />
        {previewed.problem && !previewField && (
          <div className="jp-Promote-fieldError" role="alert" data-field="environment">
            {previewed.problem}
          </div>
        )}
        <EnvironmentCard preview={preview} loading={loading} />
      </fieldset>
    </div>
  );
}

class PromoteBody extends ReactWidget implements Dialog.IBodyWidget<IPromoteChoice> {
  constructor(
    private readonly props: Omit<IFormProps, 'onChange'>,
    private readonly trans: TranslationBundle
  ) {
    super();
    this.addClass('jp-Promote-dialog');
    this._choice = props.initial;
  }

  getValue(): IPromoteChoice {
    return this._choice;
  }

  render(): JSX.Element {
    return (
      <TranslationContext.Provider value={this.trans}>
        <PromoteFormView {...this.props} onChange={choice => (this._choice = choice)} />
      </TranslationContext.Provider>
    );
  }

  private _choice: IPromoteChoice;
}

/** Show the dialog, filled with the previous choice if any; resolves to the person's choice, or null when they cancel. */
export async function askPromote(
  service: PromoteService,
  trans: TranslationBundle,
  notebook: string,
  previous: IPromoteChoice | null,
  defaultTarget: string,
  errors: Record<string, string> = {}
): Promise<IPromoteChoice | null> {
  const body = new PromoteBody(
    {
      service,
      notebook,
      initial: previous ?? { form: emptyForm(defaultTarget), preview: null, ownKernel: null },
      errors
    },
    trans
  );
  const result = await showDialog({
    title: trans.__('Promote %1 to cluster', notebook.split('/').pop() ?? notebook),
    body,
    buttons: [Dialog.cancelButton(), Dialog.okButton({ label: trans.__('Promote'), ariaLabel: trans.__('Promote') })],
    focusNodeSelector: 'select'
  });
  return result.button.accept ? result.value : null;
}
