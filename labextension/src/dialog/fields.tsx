/**
 * The building blocks of the Promote dialog: one component per field, its label, its input and the
 * error shown beside it (`errors[field]`). Each renders exactly the DOM the ui-tests select on.
 */

import * as React from 'react';

/** The dialog's errors by field ('' = the top of the dialog). */
export type FieldErrors = Record<string, string>;

/** The error of one field, when it has one. */
export function FieldErrorMessage(props: { errors: FieldErrors; field: string }): JSX.Element | null {
  const message = props.errors[props.field];
  return message ? (
    <div className="jp-Promote-fieldError" role="alert" data-field={props.field}>
      {message}
    </div>
  ) : null;
}

/** What every field has: the request field its error is keyed by (none: it shows no error of its own). */
interface IFieldProps {
  field?: string;
  errors: FieldErrors;
  /** The visible label. */
  label: React.ReactNode;
  /** The label's tooltip. */
  title?: string;
  ariaLabel: string;
  disabled?: boolean;
}

function ErrorOf(props: { field?: string; errors: FieldErrors }): JSX.Element | null {
  return props.field === undefined ? null : <FieldErrorMessage errors={props.errors} field={props.field} />;
}

/** A text input in its label, and its error. */
export function TextField(
  props: IFieldProps & {
    value: string;
    onChange: (value: string) => void;
    placeholder?: string;
    /** The input's own tooltip. */
    inputTitle?: string;
    /** data-* attributes of the input. */
    data?: Record<`data-${string}`, string>;
  }
): JSX.Element {
  return (
    <>
      <label title={props.title}>
        {props.label}
        <input
          className="jp-mod-styled"
          aria-label={props.ariaLabel}
          title={props.inputTitle}
          placeholder={props.placeholder}
          disabled={props.disabled}
          {...props.data}
          value={props.value}
          onChange={e => props.onChange(e.target.value)}
        />
      </label>
      <ErrorOf field={props.field} errors={props.errors} />
    </>
  );
}

/** A select in its label, and its error. */
export function SelectField<T extends string>(
  props: IFieldProps & {
    value: T;
    onChange: (value: T) => void;
    /** Classes beside jp-mod-styled. */
    className?: string;
    children: React.ReactNode;
  }
): JSX.Element {
  return (
    <>
      <label>
        {props.label}
        <select
          className={props.className ? `jp-mod-styled ${props.className}` : 'jp-mod-styled'}
          aria-label={props.ariaLabel}
          value={props.value}
          disabled={props.disabled}
          onChange={e => props.onChange(e.target.value as T)}
        >
          {props.children}
        </select>
      </label>
      <ErrorOf field={props.field} errors={props.errors} />
    </>
  );
}

/** A checkbox before its label, and its error. */
export function CheckboxField(
  props: IFieldProps & {
    checked: boolean;
    onChange: (checked: boolean) => void;
    data?: Record<`data-${string}`, string>;
  }
): JSX.Element {
  return (
    <>
      <label className="jp-Promote-checkbox" title={props.title}>
        <input
          type="checkbox"
          aria-label={props.ariaLabel}
          {...props.data}
          checked={props.checked}
          onChange={e => props.onChange(e.target.checked)}
        />
        {props.label}
      </label>
      <ErrorOf field={props.field} errors={props.errors} />
    </>
  );
}

/** A text area with no label of its own (its fieldset's legend names it), and its error. */
export function TextAreaField(
  props: Omit<IFieldProps, 'label' | 'title'> & {
    value: string;
    onChange: (value: string) => void;
    placeholder?: string;
    rows?: number;
  }
): JSX.Element {
  return (
    <>
      <textarea
        className="jp-mod-styled"
        aria-label={props.ariaLabel}
        placeholder={props.placeholder}
        rows={props.rows}
        value={props.value}
        onChange={e => props.onChange(e.target.value)}
      />
      <ErrorOf field={props.field} errors={props.errors} />
    </>
  );
}
