/**
 * A job's log in the detail view: followed while the job runs (appended text, the last 64 kB kept),
 * in a box that scrolls on its own and keeps following while the reader is at its end.
 */

import * as React from 'react';

import { JobsModel } from '../jobs';

const LOG_TAIL_CHARS = 64 * 1024;
const LOG_POLL_MS = 2000;

/** Follow one of a job's logs while the view is open: appended text, the last 64 kB kept. */
export function useLog(model: JobsModel, id: string, stream: 'job' | 'build', live: boolean): string {
  const [text, setText] = React.useState('');
  const offset = React.useRef(0);
  React.useEffect(() => {
    offset.current = 0; // another job or log: start again
    setText('');
  }, [id, stream]);
  React.useEffect(() => {
    let stopped = false;
    let timer = 0;
    const read = async () => {
      for (;;) {
        let chunk: { text: string; offset: number };
        try {
          chunk = await model.service.logs(id, offset.current, stream);
        } catch {
          break; // the job may be gone; the next read says so again
        }
        if (stopped || chunk.offset <= offset.current) {
          break;
        }
        offset.current = chunk.offset;
        setText(t => (t + chunk.text).slice(-LOG_TAIL_CHARS));
      }
      if (!stopped && live) {
        timer = window.setTimeout(read, LOG_POLL_MS);
      }
    };
    void read();
    return () => {
      stopped = true;
      window.clearTimeout(timer);
    };
  }, [id, stream, live]);
  return text;
}

/**
 * A log tail in a box of its own height that scrolls (the job's controls stay where they are), and
 * follows what is appended while the reader is at its end; scrolled up, it stays where they put it.
 */
export function LogTail(props: { text: string; label: string }): JSX.Element {
  const box = React.useRef<HTMLPreElement>(null);
  const following = React.useRef(true);
  React.useLayoutEffect(() => {
    if (box.current && following.current) {
      box.current.scrollTop = box.current.scrollHeight;
    }
  }, [props.text]);
  return (
    <pre
      ref={box}
      className="jp-Promote-log"
      tabIndex={0}
      aria-label={props.label}
      onScroll={e => {
        const el = e.currentTarget;
        following.current = el.scrollTop + el.clientHeight >= el.scrollHeight - 8;
      }}
    >
      {props.text}
    </pre>
  );
}
