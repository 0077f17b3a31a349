/**
 * The form of the "Promote to cluster" dialog: pre-flight checks, then one section per concern
 * (target, when: now or on a schedule, parameters, resources, monitoring, notifications, groups of jobs, environment), then the
 * sections other extensions added through IPromoteDialogExtension. No JupyterLab widget import: Jest
 * renders it.
 */

import * as React from 'react';

import { PromoteService } from '../api/service';
import { IFreezePreview, INotifyDestination, IParameter, ITarget } from '../api/types';
import { notifyChoice, requestedGpus } from '../form/choices';
import { IPromoteForm } from '../form/form';
import { IScheduleForm } from '../form/schedule';
import { useTranslation } from '../i18n';
import { parameterText } from '../parameters';
import { PreflightChecks, usePreview } from '../preview';
import { IPromoteDialogSection } from '../tokens';
import { ScheduleSection } from './schedule';
import { ContentionSection, EnvironmentSection, RepeatSection, SweepSection } from './groups';
import {
  MonitoringSection,
  NotifySection,
  ParametersSection,
  ReliabilitySection,
  ResourcesSection,
  TargetSection
} from './sections';

/** What the dialog returns: the form, and what the server said of the notebook (its parameters, its own kernel). */
export interface IPromoteChoice {
  form: IPromoteForm;
  preview: IFreezePreview | null;
  /** The notebook's own kernelspec, once a preview has said it. */
  ownKernel: string | null;
  /** Run now, or create a schedule that fires the job. */
  schedule: IScheduleForm;
}

export interface IPromoteFormProps {
  service: PromoteService;
  notebook: string;
  initial: IPromoteChoice;
  errors: Record<string, string>;
  /** The sections other extensions added, in order. */
  sections: readonly IPromoteDialogSection[];
  onChange: (choice: IPromoteChoice) => void;
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

/** The targets and notification destinations the server offers, asked for once; the form follows what it offers. */
function useOffers(service: PromoteService, setForm: React.Dispatch<React.SetStateAction<IPromoteForm>>) {
  const trans = useTranslation();
  const [targets, setTargets] = React.useState<ITarget[] | null>(null);
  const [destinations, setDestinations] = React.useState<INotifyDestination[]>([]);
  const [problem, setProblem] = React.useState<string | null>(null);
  React.useEffect(() => {
    service
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
    service
      .notifications()
      .then(offered => {
        setDestinations(offered.destinations);
        setForm(f => ({ ...f, notify: notifyChoice(f.notify, offered) }));
      })
      .catch(e => setProblem(trans.__('notification destinations: %1', e.message)));
  }, []);
  return { targets, destinations, problem };
}

/** The form, its sections in order, and the errors of no field at its top. */
export function PromoteForm(props: IPromoteFormProps): JSX.Element {
  const [form, setForm] = React.useState<IPromoteForm>(props.initial.form);
  const [schedule, setSchedule] = React.useState<IScheduleForm>(props.initial.schedule);
  const { targets, destinations, problem } = useOffers(props.service, setForm);
  const initial = { preview: props.initial.preview, own: props.initial.ownKernel };
  const previewed = usePreview(props.service, props.notebook, form.kernel, requestedGpus(form), form.target, initial);
  const { preview, own, loading } = previewed;

  React.useEffect(() => {
    if (preview) {
      setForm(f => ({ ...f, parameters: withDefaults(f.parameters, preview.parameters) }));
    }
  }, [preview]);
  React.useEffect(() => {
    props.onChange({ form, preview, ownKernel: own, schedule });
  }, [form, preview, own, schedule]);

  const update = (change: Partial<IPromoteForm>) => setForm(f => ({ ...f, ...change }));
  // a preview refused for a field of the form (the GPU count) shows there; the server's answer to Promote wins
  const previewField = previewed.problem ? previewed.problemField : '';
  const errors = previewField ? { [previewField]: previewed.problem!, ...props.errors } : props.errors;
  const section = { form, update, errors };

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
      <TargetSection {...section} targets={targets} />
      <ScheduleSection
        service={props.service}
        schedule={schedule}
        onChange={change => setSchedule(s => ({ ...s, ...change }))}
        errors={errors}
      />
      <ParametersSection {...section} parameters={preview?.parameters ?? null} />
      <ResourcesSection {...section} target={targets?.find(t => t.name === form.target)} />
      <MonitoringSection {...section} />
      <ReliabilitySection {...section} />
      <NotifySection {...section} destinations={destinations} />
      <SweepSection {...section} />
      <RepeatSection {...section} />
      <ContentionSection {...section} />
      <EnvironmentSection {...section} previewed={previewed} previewField={previewField} />
      {props.sections.map(added => (
        <added.component
          key={added.id}
          value={form.sections[added.id] ?? added.initial}
          onChange={(value: unknown) => setForm(f => ({ ...f, sections: { ...f.sections, [added.id]: value } }))}
          form={form}
          preview={preview}
          errors={errors}
        />
      ))}
    </div>
  );
}
