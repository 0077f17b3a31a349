/**
 * The golden event streams of tests/golden/events/ (contract section 5): each folded from an empty
 * view must give exactly its `view`. The server's fold (jupyter_promote/events/fold.py) is held to
 * the same files, so both folds agree event for event.
 */
import * as fs from 'fs';
import * as path from 'path';

import { IJobEvent } from '../api/jobs';
import { foldEvents } from '../job/fold';
import { emptyView, viewJson } from '../job/view';

const FOLDER = path.join(__dirname, '../../../tests/golden/events');

interface IGolden {
  description: string;
  events: IJobEvent[];
  view: Record<string, unknown>;
}

const files = fs
  .readdirSync(FOLDER)
  .filter(name => name.endsWith('.json'))
  .sort();

describe('the golden event streams', () => {
  it('has at least 8 of them', () => {
    expect(files.length).toBeGreaterThanOrEqual(8);
  });

  it.each(files.map(name => [name]))('%s folds into its view', (name: string) => {
    const golden = JSON.parse(fs.readFileSync(path.join(FOLDER, name), 'utf8')) as IGolden;
    expect(typeof golden.description).toBe('string');
    const job = golden.events.find(e => typeof e.job === 'string')?.job ?? 'job';
    const view = viewJson(foldEvents(emptyView(job), golden.events));
    expect(view).toStrictEqual(golden.view);
    // exactly the contract's keys, in its order
    expect(Object.keys(view)).toEqual(Object.keys(golden.view));
  });

  it('folds the same when the events arrive twice (a reconnect replays them)', () => {
    for (const name of files) {
      const golden = JSON.parse(fs.readFileSync(path.join(FOLDER, name), 'utf8')) as IGolden;
      const once = foldEvents(emptyView('job'), golden.events);
      expect(viewJson(foldEvents(once, golden.events))).toStrictEqual(golden.view);
    }
  });
});
