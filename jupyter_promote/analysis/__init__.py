"""Judging behaviour, not exit codes: parity with the notebook's baseline, a group's spread, replicas judged
together, and a job beside a stress workload.
"""
