"""The job's channel back to its submitter where they share no filesystem (Ray, Kubernetes).

The job writes its events and files to its own stdout as marked lines; the engine keeps that stream (Ray's
job log, the pod's log) and serves it to whoever may read the job; the submitter's side follows the
stream and writes what it carries into the local run directory. The job never connects to the submitter
(usually unreachable: behind NAT, inside a hub), needs no storage service, and a submitter that restarts
reads the stream again from its start and skips what it has (the job's own ``seq``).

- :mod:`.wire`: the line format (an event per line; events past a line's size and files in fragments;
  every record signed under the job's key, at the start of a line of its own).
- :mod:`.keys`: the job's key, made by the submitter, taken by the runner before the kernel starts.
- :mod:`.decoder`: the stream back into records, in bounded time and memory; anything unsigned is text.
- :mod:`.sender`: in the job, forwards ``events.jsonl`` as it grows, the output notebook now and then, and
  the job's files (output notebook, observed environment, artifacts) before its final status.
- :mod:`.receiver`: on the submitter's side, appends the job's events to the local event log (numbered
  there, one source of seqs, the job's own kept as ``remote_seq``; gaps reported) and writes its files.
"""
