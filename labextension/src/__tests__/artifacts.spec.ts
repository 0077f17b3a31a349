import { artifactEndPoint, artifactName, artifactsToShow, formatSize, reportEndPoint } from '../artifacts';

describe('formatSize', () => {
  it('shows bytes as they are, then powers of 1024 with at most one decimal', () => {
    expect(formatSize(0)).toBe('0 B');
    expect(formatSize(1023)).toBe('1023 B');
    expect(formatSize(1024)).toBe('1 KB');
    expect(formatSize(1536)).toBe('1.5 KB');
    expect(formatSize(5 * 2 ** 20)).toBe('5 MB');
    expect(formatSize(3.25 * 2 ** 30)).toBe('3.3 GB');
  });

  it('moves to the next unit rather than show 1024 of one', () => {
    expect(formatSize(2 ** 20 - 1)).toBe('1 MB');
  });

  it('says it does not know a size that is not one', () => {
    expect(formatSize(-1)).toBe('?');
    expect(formatSize(NaN)).toBe('?');
  });
});

describe('artifactEndPoint', () => {
  it('keeps the separators of a nested path and encodes each segment', () => {
    expect(artifactEndPoint('ab12', 'result.txt')).toBe('jobs/ab12/artifacts/result.txt');
    expect(artifactEndPoint('ab12', 'ckpt/model.pt')).toBe('jobs/ab12/artifacts/ckpt/model.pt');
    expect(artifactEndPoint('ab12', 'out dir/a#1?.csv')).toBe('jobs/ab12/artifacts/out%20dir/a%231%3F.csv');
    expect(artifactEndPoint('ab12', 'plots/ü%.png')).toBe('jobs/ab12/artifacts/plots/%C3%BC%25.png');
  });

  it('drops empty and "." segments', () => {
    expect(artifactEndPoint('ab12', './ckpt//model.pt')).toBe('jobs/ab12/artifacts/ckpt/model.pt');
  });
});

describe('reportEndPoint', () => {
  it("is the job's report, opened or saved", () => {
    expect(reportEndPoint('ab12')).toBe('jobs/ab12/report');
    expect(reportEndPoint('ab12', true)).toBe('jobs/ab12/report?download=1');
  });
});

describe('artifactName', () => {
  it('is the last segment of the path', () => {
    expect(artifactName('ckpt/model.pt')).toBe('model.pt');
    expect(artifactName('result.txt')).toBe('result.txt');
  });
});

describe('artifactsToShow', () => {
  const files = [{ path: 'result.txt', size: 3 }];

  it("is the detail's list once it has come, empty when the server sent none", () => {
    expect(artifactsToShow({ artifacts: files }, {})).toEqual(files);
    expect(artifactsToShow({}, { artifacts: files })).toEqual([]);
  });

  it("is the record's list, or null (not known yet), before the detail comes", () => {
    expect(artifactsToShow(null, { artifacts: files })).toEqual(files);
    expect(artifactsToShow(null, {})).toBeNull();
  });
});
