/**
 * A notebook parameter between the text a person edits and the JSON value a request sends, typed as the
 * notebook's default is (as papermill reads the `parameters` cell). Pure, no JupyterLab import.
 */

/** A parameter's edited text as the JSON value to send, typed as the notebook's default is. */
export function parseParameter(type: string, text: string): unknown {
  const trimmed = text.trim();
  switch (type) {
    case 'int':
    case 'float': {
      const n = Number(trimmed);
      if (trimmed === '' || !Number.isFinite(n) || (type === 'int' && !Number.isInteger(n))) {
        throw new Error(`not ${type === 'int' ? 'a whole number' : 'a number'}`);
      }
      return n;
    }
    case 'bool':
      if (trimmed === 'True' || trimmed === 'true') {
        return true;
      }
      if (trimmed === 'False' || trimmed === 'false') {
        return false;
      }
      throw new Error('not True or False');
    case 'str':
      return text;
    default:
      try {
        return JSON.parse(trimmed);
      } catch {
        return text;
      }
  }
}

/** A parameter value as a person edits it (Python's spelling for booleans). */
export function parameterText(type: string, value: unknown): string {
  if (type === 'bool') {
    return value ? 'True' : 'False';
  }
  if (type === 'str' && typeof value === 'string') {
    return value;
  }
  return JSON.stringify(value);
}
