"""Notebook -> job notebook (injected cells) and typed parameters, with papermill's semantics."""
