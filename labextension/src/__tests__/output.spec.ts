import { outputCopyPath } from '../output';

describe('outputCopyPath', () => {
  it('names the copy after the notebook and the job', async () => {
    expect(await outputCopyPath('dir/train.ipynb', '0123456789ab', async () => false)).toBe(
      'dir/train.promote-01234567.ipynb'
    );
  });

  it('never takes a name that exists (a copy the user edited)', async () => {
    const taken = new Set(['train.promote-01234567.ipynb', 'train.promote-01234567-2.ipynb']);
    expect(await outputCopyPath('train.ipynb', '0123456789ab', async p => taken.has(p))).toBe(
      'train.promote-01234567-3.ipynb'
    );
  });
});
