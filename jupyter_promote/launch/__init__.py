"""From a request to a job that ends: the one launcher (target, checks, pipeline), the lifecycle of one job
(prepare -> submit -> follow -> judge), and groups of jobs (sweeps, replicas, contention), for both doors.
"""
