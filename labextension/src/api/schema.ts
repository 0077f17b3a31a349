/**
 * GENERATED FILE, DO NOT EDIT: the REST schemas of jupyter_promote/server/openapi.yaml as TypeScript,
 * written by `jlpm build:types` (labextension/tools/schema-types.mjs, openapi-typescript).
 * Change the OpenAPI document, then run `jlpm build:types`; `jlpm lint:check` fails while they differ.
 */
/* eslint-disable */

export interface paths {
  '/jupyter-promote/targets': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /** Targets, whether each is available (and why not), and its options schema */
    get: {
      parameters: {
        query?: never;
        header?: never;
        path?: never;
        cookie?: never;
      };
      requestBody?: never;
      responses: {
        /** @description {targets: [{name, display_name, available, reason, options_schema}]} */
        200: {
          headers: {
            [name: string]: unknown;
          };
          content?: never;
        };
      };
    };
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/jupyter-promote/notifications': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /** The notification destinations a job may name in `notify` (no URLs or addresses), and the defaults */
    get: {
      parameters: {
        query?: never;
        header?: never;
        path?: never;
        cookie?: never;
      };
      requestBody?: never;
      responses: {
        /** @description {destinations: [{name, kind, on}], defaults: [name]} */
        200: {
          headers: {
            [name: string]: unknown;
          };
          content?: never;
        };
      };
    };
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/jupyter-promote/jobs': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /** Jobs, newest first */
    get: {
      parameters: {
        query?: {
          state?: 'pending' | 'queued' | 'running' | 'succeeded' | 'failed' | 'cancelled';
          /** @description path relative to the server's root */
          notebook?: string;
          /** @description the jobs of one sweep (its id) */
          sweep?: string;
          /** @description the jobs of one user (who promoted them) */
          owner?: string;
          /** @description the jobs one schedule fired (its id) */
          schedule?: string;
          limit?: number;
          offset?: number;
        };
        header?: never;
        path?: never;
        cookie?: never;
      };
      requestBody?: never;
      responses: {
        /** @description {jobs: [job.json], total, limit, offset} */
        200: {
          headers: {
            [name: string]: unknown;
          };
          content?: never;
        };
        /** @description a query parameter that is not valid */
        400: {
          headers: {
            [name: string]: unknown;
          };
          content?: never;
        };
      };
    };
    put?: never;
    /** Promote a notebook; answers at once, the job prepares and runs in the background */
    post: {
      parameters: {
        query?: never;
        header?: never;
        path?: never;
        cookie?: never;
      };
      requestBody: {
        content: {
          'application/json': components['schemas']['JobRequest'];
        };
      };
      responses: {
        /** @description {id}; for a group (sweep, replicas/seeds, contention) {id: the first job, sweep: the group's id, ids: every job in order, kind: grid | replicas | contention} */
        202: {
          headers: {
            [name: string]: unknown;
          };
          content?: never;
        };
        /** @description an invalid field */
        400: {
          headers: {
            [name: string]: unknown;
          };
          content?: never;
        };
        /** @description a notebook path outside the server's root */
        403: {
          headers: {
            [name: string]: unknown;
          };
          content?: never;
        };
        /** @description the target is unavailable */
        503: {
          headers: {
            [name: string]: unknown;
          };
          content?: never;
        };
      };
    };
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/jupyter-promote/jobs/{job_id}': {
    parameters: {
      query?: never;
      header?: never;
      path: {
        job_id: string;
      };
      cookie?: never;
    };
    /** One job (job.json's fields, with state, reason, run_dir, its state transitions and its environment) */
    get: {
      parameters: {
        query?: never;
        header?: never;
        path: {
          job_id: string;
        };
        cookie?: never;
      };
      requestBody?: never;
      responses: {
        /** @description job.json plus run_dir, transitions and environment (the job lock's card: python, torch, cuda, cpu, gpu, key packages) or null, notebook_path (the notebook relative to the server's root, or null), and artifacts: [{path, size}] (the files the job wrote in its working directory, RUN_DIR/work) */
        200: {
          headers: {
            [name: string]: unknown;
          };
          content?: never;
        };
        /** @description no such job */
        404: {
          headers: {
            [name: string]: unknown;
          };
          content?: never;
        };
      };
    };
    put?: never;
    post?: never;
    /** Cancel the job (idempotent; a finished job stays as it ended), or with purge=true remove a finished job */
    delete: {
      parameters: {
        query?: {
          purge?: 'true' | '1';
        };
        header?: never;
        path: {
          job_id: string;
        };
        cookie?: never;
      };
      requestBody?: never;
      responses: {
        /** @description purge: {id, removed: true}: the job's record, events and run directory are gone */
        200: {
          headers: {
            [name: string]: unknown;
          };
          content?: never;
        };
        /** @description {id, state} */
        202: {
          headers: {
            [name: string]: unknown;
          };
          content?: never;
        };
        /** @description no such job */
        404: {
          headers: {
            [name: string]: unknown;
          };
          content?: never;
        };
        /** @description purge of a job that has not ended (cancel it first) */
        409: {
          headers: {
            [name: string]: unknown;
          };
          content?: never;
        };
      };
    };
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/jupyter-promote/jobs/{job_id}/rerun': {
    parameters: {
      query?: never;
      header?: never;
      path: {
        job_id: string;
      };
      cookie?: never;
    };
    get?: never;
    put?: never;
    /** The same request again, as a new job */
    post: {
      parameters: {
        query?: never;
        header?: never;
        path: {
          job_id: string;
        };
        cookie?: never;
      };
      requestBody?: never;
      responses: {
        /** @description {id} */
        202: {
          headers: {
            [name: string]: unknown;
          };
          content?: never;
        };
        /** @description the notebook no longer exists */
        400: {
          headers: {
            [name: string]: unknown;
          };
          content?: never;
        };
        /** @description the notebook is no longer inside the server's root (confined again on every rerun) */
        403: {
          headers: {
            [name: string]: unknown;
          };
          content?: never;
        };
        /** @description no such job */
        404: {
          headers: {
            [name: string]: unknown;
          };
          content?: never;
        };
      };
    };
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/jupyter-promote/jobs/{job_id}/events': {
    parameters: {
      query?: {
        /** @description return events with seq > after */
        after?: number;
      };
      header?: never;
      path: {
        job_id: string;
      };
      cookie?: never;
    };
    /** The job's events after a seq (what a reconnecting client missed) */
    get: {
      parameters: {
        query?: {
          /** @description return events with seq > after */
          after?: number;
        };
        header?: never;
        path: {
          job_id: string;
        };
        cookie?: never;
      };
      requestBody?: never;
      responses: {
        /** @description {events: [...]} */
        200: {
          headers: {
            [name: string]: unknown;
          };
          content?: never;
        };
        /** @description no such job */
        404: {
          headers: {
            [name: string]: unknown;
          };
          content?: never;
        };
      };
    };
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/jupyter-promote/jobs/{job_id}/logs': {
    parameters: {
      query?: {
        /** @description byte offset */
        after?: number;
        /** @description the job's stdout/stderr, or the image build's output */
        stream?: 'job' | 'build';
      };
      header?: never;
      path: {
        job_id: string;
      };
      cookie?: never;
    };
    /** The job's stdout/stderr (or its image build's output) from a byte offset (at most 1 MiB per call) */
    get: {
      parameters: {
        query?: {
          /** @description byte offset */
          after?: number;
          /** @description the job's stdout/stderr, or the image build's output */
          stream?: 'job' | 'build';
        };
        header?: never;
        path: {
          job_id: string;
        };
        cookie?: never;
      };
      requestBody?: never;
      responses: {
        /** @description {text, offset} */
        200: {
          headers: {
            [name: string]: unknown;
          };
          content?: never;
        };
        /** @description no such job */
        404: {
          headers: {
            [name: string]: unknown;
          };
          content?: never;
        };
      };
    };
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/jupyter-promote/jobs/{job_id}/output': {
    parameters: {
      query?: never;
      header?: never;
      path: {
        job_id: string;
      };
      cookie?: never;
    };
    /** The output notebook (saved after every cell) */
    get: {
      parameters: {
        query?: never;
        header?: never;
        path: {
          job_id: string;
        };
        cookie?: never;
      };
      requestBody?: never;
      responses: {
        /** @description the notebook */
        200: {
          headers: {
            [name: string]: unknown;
          };
          content?: never;
        };
        /** @description no output notebook yet */
        400: {
          headers: {
            [name: string]: unknown;
          };
          content?: never;
        };
        /** @description no such job */
        404: {
          headers: {
            [name: string]: unknown;
          };
          content?: never;
        };
      };
    };
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/jupyter-promote/jobs/{job_id}/report': {
    parameters: {
      query?: {
        /** @description 1 or true: as an attachment (saved), else inline (opened) */
        download?: '1' | 'true' | '0' | 'false';
      };
      header?: never;
      path: {
        job_id: string;
      };
      cookie?: never;
    };
    /** The job's report.html, written when it ended: a header (verdict, parity per metric, alerts, parameters, environment, timings) over the output notebook without its injected cells */
    get: {
      parameters: {
        query?: {
          /** @description 1 or true: as an attachment (saved), else inline (opened) */
          download?: '1' | 'true' | '0' | 'false';
        };
        header?: never;
        path: {
          job_id: string;
        };
        cookie?: never;
      };
      requestBody?: never;
      responses: {
        /** @description text/html, served under Content-Security-Policy: sandbox; default-src 'none' (nothing in it runs or loads) */
        200: {
          headers: {
            [name: string]: unknown;
          };
          content?: never;
        };
        /** @description a download value that is not one of the listed */
        400: {
          headers: {
            [name: string]: unknown;
          };
          content?: never;
        };
        /** @description no such job, or no report yet (the job has not ended) */
        404: {
          headers: {
            [name: string]: unknown;
          };
          content?: never;
        };
      };
    };
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/jupyter-promote/jobs/{job_id}/artifacts/{path}': {
    parameters: {
      query?: never;
      header?: never;
      path: {
        job_id: string;
        /** @description an artifact's path, as listed in the job's artifacts */
        path: string;
      };
      cookie?: never;
    };
    /** One file the job wrote, as a download */
    get: {
      parameters: {
        query?: never;
        header?: never;
        path: {
          job_id: string;
          /** @description an artifact's path, as listed in the job's artifacts */
          path: string;
        };
        cookie?: never;
      };
      requestBody?: never;
      responses: {
        /** @description the file's bytes, application/octet-stream, as an attachment */
        200: {
          headers: {
            [name: string]: unknown;
          };
          content?: never;
        };
        /** @description not one of the job's artifacts */
        400: {
          headers: {
            [name: string]: unknown;
          };
          content?: never;
        };
        /** @description no such job */
        404: {
          headers: {
            [name: string]: unknown;
          };
          content?: never;
        };
      };
    };
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/jupyter-promote/sweeps/{sweep_id}': {
    parameters: {
      query?: never;
      header?: never;
      path: {
        sweep_id: string;
      };
      cookie?: never;
    };
    /** A group's summary (a sweep, replicas and seeds, or contention) */
    get: {
      parameters: {
        query?: never;
        header?: never;
        path: {
          sweep_id: string;
        };
        cookie?: never;
      };
      requestBody?: never;
      responses: {
        /** @description {id, kind, notebook, target, size, states: {state: count}, metrics: {name: {min, max, mean, std, tasks, seed_std?, replica_std?}}, tasks: [{index, job, dir, state, parameters, reason, metrics}], replicas: [{parameters, tasks, identical, first_divergence}], seed_band: {metric: width}, contention: the contention report or null} */
        200: {
          headers: {
            [name: string]: unknown;
          };
          content?: never;
        };
        /** @description no such group */
        404: {
          headers: {
            [name: string]: unknown;
          };
          content?: never;
        };
      };
    };
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/jupyter-promote/freeze': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    get?: never;
    put?: never;
    /** Preview the lock and the image tag a promote would use (and whether the image exists); builds nothing */
    post: {
      parameters: {
        query?: never;
        header?: never;
        path?: never;
        cookie?: never;
      };
      requestBody: {
        content: {
          'application/json': {
            notebook: string;
            /** @description preview this kernelspec's environment instead of the notebook's own */
            kernel?: string;
            /** @description the GPUs the job would request (for the pre-flight check) */
            gpus?: number;
            /** @description the target the job would run on (default: the server's default); local carries the whole environment, so no environment read is reported */
            target?: string;
          };
        };
      };
      responses: {
        /** @description {kernel (the notebook's own kernelspec), kernels: [{name, display_name}] (the installed Python kernelspecs), check: {findings: [{kind, message, cell}]} (what will differ on the cluster: cells out of order or never run, names used before defined, installs, paths, environment variables, CUDA without a GPU), summary, environment (card), parameters: [{name, type, default, value, literal, help}] (the parameters cell, as papermill reads it), lock, image: {tag, base_image, exists} | null} */
        200: {
          headers: {
            [name: string]: unknown;
          };
          content?: never;
        };
        /** @description an invalid notebook */
        400: {
          headers: {
            [name: string]: unknown;
          };
          content?: never;
        };
        /** @description a notebook path outside the server's root */
        403: {
          headers: {
            [name: string]: unknown;
          };
          content?: never;
        };
      };
    };
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/jupyter-promote/schedules': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /** This user's schedules */
    get: {
      parameters: {
        query?: never;
        header?: never;
        path?: never;
        cookie?: never;
      };
      requestBody?: never;
      responses: {
        /** @description {schedules: [{id, name, notebook, request, cron, timezone, paused, missed, overlap, freeze, frozen, created_at, next_due, next_due_at, last_fired, last_fired_at, queued, skipped, last_job, note}]} */
        200: {
          headers: {
            [name: string]: unknown;
          };
          content?: never;
        };
      };
    };
    put?: never;
    /** Create a schedule; answers with it and its next five due times */
    post: {
      parameters: {
        query?: never;
        header?: never;
        path?: never;
        cookie?: never;
      };
      requestBody: {
        content: {
          'application/json': components['schemas']['ScheduleRequest'];
        };
      };
      responses: {
        /** @description the schedule, with next: [five due times, ISO 8601 in its time zone] */
        201: {
          headers: {
            [name: string]: unknown;
          };
          content?: never;
        };
        /** @description an invalid field, named in the message (cron, timezone, the request's fields) */
        400: {
          headers: {
            [name: string]: unknown;
          };
          content?: never;
        };
        /** @description a notebook path outside the server's root */
        403: {
          headers: {
            [name: string]: unknown;
          };
          content?: never;
        };
        /** @description another schedule has this name */
        409: {
          headers: {
            [name: string]: unknown;
          };
          content?: never;
        };
      };
    };
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/jupyter-promote/schedules/preview': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    get?: never;
    put?: never;
    /** The next five due times of a cron expression in a time zone, checked as a new schedule's are; creates nothing */
    post: {
      parameters: {
        query?: never;
        header?: never;
        path?: never;
        cookie?: never;
      };
      requestBody: {
        content: {
          'application/json': components['schemas']['SchedulePreview'];
        };
      };
      responses: {
        /** @description {next: [five due times after now, ISO 8601 in the time zone]} */
        200: {
          headers: {
            [name: string]: unknown;
          };
          content?: never;
        };
        /** @description a cron expression that is not one, or an unknown time zone, named in the message */
        400: {
          headers: {
            [name: string]: unknown;
          };
          content?: never;
        };
      };
    };
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/jupyter-promote/schedules/{schedule_id}': {
    parameters: {
      query?: never;
      header?: never;
      path: {
        schedule_id: string;
      };
      cookie?: never;
    };
    /** One schedule, with its next five due times and the history of its runs */
    get: {
      parameters: {
        query?: never;
        header?: never;
        path: {
          schedule_id: string;
        };
        cookie?: never;
      };
      requestBody?: never;
      responses: {
        /** @description the schedule, with next and history {jobs, metrics: {name: [value or null]}, drift: [summary]} of its last 10 succeeded runs */
        200: {
          headers: {
            [name: string]: unknown;
          };
          content?: never;
        };
        /** @description no such schedule */
        404: {
          headers: {
            [name: string]: unknown;
          };
          content?: never;
        };
      };
    };
    put?: never;
    post?: never;
    /** Delete a schedule (the jobs it fired stay) */
    delete: {
      parameters: {
        query?: never;
        header?: never;
        path: {
          schedule_id: string;
        };
        cookie?: never;
      };
      requestBody?: never;
      responses: {
        /** @description {id, deleted: true} */
        200: {
          headers: {
            [name: string]: unknown;
          };
          content?: never;
        };
        /** @description no such schedule */
        404: {
          headers: {
            [name: string]: unknown;
          };
          content?: never;
        };
      };
    };
    options?: never;
    head?: never;
    /** Pause or resume a schedule, or change its cron expression, time zone or policies */
    patch: {
      parameters: {
        query?: never;
        header?: never;
        path: {
          schedule_id: string;
        };
        cookie?: never;
      };
      requestBody: {
        content: {
          'application/json': components['schemas']['ScheduleUpdate'];
        };
      };
      responses: {
        /** @description the schedule, with next */
        200: {
          headers: {
            [name: string]: unknown;
          };
          content?: never;
        };
        /** @description an invalid field */
        400: {
          headers: {
            [name: string]: unknown;
          };
          content?: never;
        };
        /** @description no such schedule */
        404: {
          headers: {
            [name: string]: unknown;
          };
          content?: never;
        };
      };
    };
    trace?: never;
  };
  '/jupyter-promote/schedules/{schedule_id}/run': {
    parameters: {
      query?: never;
      header?: never;
      path: {
        schedule_id: string;
      };
      cookie?: never;
    };
    get?: never;
    put?: never;
    /** Fire the schedule now (whatever its overlap policy or pause), as a job carrying the schedule's id */
    post: {
      parameters: {
        query?: never;
        header?: never;
        path: {
          schedule_id: string;
        };
        cookie?: never;
      };
      requestBody?: never;
      responses: {
        /** @description {id: the job's id} */
        202: {
          headers: {
            [name: string]: unknown;
          };
          content?: never;
        };
        /** @description the schedule's notebook no longer exists */
        400: {
          headers: {
            [name: string]: unknown;
          };
          content?: never;
        };
        /** @description no such schedule */
        404: {
          headers: {
            [name: string]: unknown;
          };
          content?: never;
        };
      };
    };
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
}
export type webhooks = Record<string, never>;
export interface components {
  schemas: {
    /** @description A schedule: a job request (the JobRequest, validated as POST jobs validates it) fired by the server at each due time of a cron expression in a time zone. Refused with a 400 naming the field: a cron expression that is not one, an unknown time zone, a notebook that does not exist, a group (sweep, replicas, contention); a name another schedule has is a 409. Nothing is stored when it is refused. */
    ScheduleRequest: {
      /** @description unique; default: the notebook's name and the schedule's id */
      name?: string;
      /** @description five fields: minute hour day month weekday, as croniter reads them ("0 3 * * *": 03:00 each day) */
      cron: string;
      /**
       * @description an IANA time zone (Europe/Berlin); daylight-saving changes as croniter handles them
       * @default UTC
       */
      timezone?: string;
      /**
       * @description due times missed while no server ran: run the latest once, run each, or run none (said in the schedule's note and the server's log)
       * @default latest
       * @enum {string}
       */
      missed?: 'latest' | 'all' | 'skip';
      /**
       * @description a due time while the schedule's previous job still runs: skipped (counted), queued until it ends, or run anyway
       * @default skip
       * @enum {string}
       */
      overlap?: 'skip' | 'queue' | 'allow';
      /**
       * @description once: the notebook as it was at creation runs each time (its hash recorded); each_run: the notebook as it is at each due time
       * @default once
       * @enum {string}
       */
      freeze?: 'once' | 'each_run';
      request: components['schemas']['JobRequest'];
    };
    /** @description What POST schedules/preview reads (the cron expression and the time zone of a ScheduleRequest). */
    SchedulePreview: {
      /** @description five fields: minute hour day month weekday */
      cron: string;
      /**
       * @description an IANA time zone (Europe/Berlin)
       * @default UTC
       */
      timezone?: string;
    };
    /** @description What PATCH schedules/{id} changes (the same rules as ScheduleRequest); the next due time is computed again. */
    ScheduleUpdate: {
      paused?: boolean;
      cron?: string;
      timezone?: string;
      /** @enum {string} */
      missed?: 'latest' | 'all' | 'skip';
      /** @enum {string} */
      overlap?: 'skip' | 'queue' | 'allow';
    };
    /** @description What a POST jobs body asks for, declared once: the server validates bodies with it, the CLI builds one, job.json keeps it verbatim (a rerun is the same request) and the TypeScript types are generated from it. */
    JobRequest: {
      /** @description path relative to the server's root, resolved as the contents manager resolves it */
      notebook: string;
      /** @description the kernelspec to run with (default: the notebook's own); an unknown one is a 400 listing the installed ones */
      kernel?: string;
      /** @description the target to run on (default: the server's c.PromoteSettings.default_target) */
      target?: string;
      parameters?: Record<string, unknown>;
      resources?: {
        cpus?: number;
        /** @example 4G */
        memory?: string;
        gpus?: number;
        /** @example 2h */
        time?: string;
      };
      /** @description MonitorSettings fields (nan_action, stall_timeout_s, ...): the monitor checks' declared settings */
      monitor?: Record<string, unknown>;
      deterministic?: boolean;
      /** @description Destinations (c.Notifications.destinations) told when the job ends or raises an alert; [] for none; absent: the server's c.Notifications.defaults. */
      notify?: string[];
      /** @description Inputs on storage the cluster reads: name -> URL (s3://bucket/prefix, any scheme fsspec knows). Checked to be there before the job is accepted; fetched on the node into its content cache before the kernel starts; the notebook finds each at promote.data(NAME). Credentials come as secrets. */
      data?: {
        [key: string]: string;
      };
      /** @description Attempts after the first when the infrastructure fails the job (preempted, evicted, its node or its target lost), after a back-off (c.PromoteSettings.retry_backoff_s); never for the notebook's own errors, NaN, OOM, a time limit or a cancel. Default 0. */
      retries?: number;
      /** @description Environment variables the job gets from a source, by reference: variable -> env:VAR (the server's environment), file:PATH (the server's), kubernetes:SECRET/KEY, node-file:PATH (where the job runs). Merged over c.PromoteSettings.secrets. Values are read at submit and never stored; what the job prints of them is masked. */
      secrets?: {
        [key: string]: string;
      };
      /** @description Run one job per parameter set: a grid {name: [values]} (every combination) or a list of parameter sets; each set is merged over `parameters`. */
      sweep?:
        | {
            [key: string]: unknown[];
          }
        | Record<string, unknown>[];
      /** @description a sweep's jobs running at once (default: all) */
      max_parallel?: number;
      /** @description identical runs (per seed); their spread and first divergence, judged together */
      replicas?: number;
      /** @description one run per seed (the `seed` parameter), times replicas; the seed-variance band in parity */
      seeds?: number[];
      /**
       * @description run alone, then beside a stress workload (cpu[:N], memory[:SIZE], gpu[:N]); both side by side
       * @example cpu:4
       */
      contention?: string;
    };
  };
  responses: never;
  parameters: never;
  requestBodies: never;
  headers: never;
  pathItems: never;
}
export type $defs = Record<string, never>;
export type operations = Record<string, never>;
