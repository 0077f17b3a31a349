import { kernelChoice, kernelOptions, requestedGpus } from '../form/choices';
import { formFieldOf } from '../form/fields';
import { emptyForm, toRequest } from '../form/form';

describe('the kernel a job runs with', () => {
  it("is sent only when it is not the notebook's own", () => {
    // Given a form whose kernel was picked in the dialog
    const picked = (name: string) => ({ ...emptyForm('local'), kernel: kernelChoice(name, 'python3') });

    // Then the notebook's own kernel is left out of the request, another is sent
    expect(toRequest('nb.ipynb', picked('python3'), [])).toEqual({ notebook: 'nb.ipynb', target: 'local' });
    expect(toRequest('nb.ipynb', picked('torch-2.3'), [])).toEqual({
      notebook: 'nb.ipynb',
      target: 'local',
      kernel: 'torch-2.3'
    });
    expect(toRequest('nb.ipynb', emptyForm('local'), []).kernel).toBeUndefined();
  });

  it("offers the installed kernels, and the notebook's own and the chosen one even when not installed", () => {
    const installed = [{ name: 'python3', display_name: 'Python 3' }];
    expect(kernelOptions(installed, 'python3', 'python3')).toEqual(installed);
    expect(kernelOptions(installed, 'old-env', 'python3')).toEqual([
      ...installed,
      { name: 'old-env', display_name: 'old-env (not installed)' }
    ]);
    expect(kernelOptions([], null, '')).toEqual([]);
  });

  it('shows a server refusal beside the kernel field', () => {
    // the server names the field ("kernel 'py39': no such kernelspec" has field kernel, subject py39)
    expect(formFieldOf('kernel')).toBe('kernel');
    expect(formFieldOf(null)).toBe(''); // no field: the top of the dialog
  });
});

describe('requestedGpus', () => {
  it('is the GPU count while the field holds one, else undefined', () => {
    const withGpus = (gpus: string) => ({ ...emptyForm('local'), resources: { cpus: '', memory: '', gpus, time: '' } });
    expect(requestedGpus(withGpus(''))).toBeUndefined();
    expect(requestedGpus(withGpus(' 2 '))).toBe(2);
    expect(requestedGpus(withGpus('0'))).toBe(0);
    expect(requestedGpus(withGpus('1.5'))).toBeUndefined();
    expect(requestedGpus(withGpus('two'))).toBeUndefined();
  });
});
