"""Execution of a job notebook: the papermill engine and the runner process around it."""
