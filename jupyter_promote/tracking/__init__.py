"""Experiment tracking: each finished job exported to a tracking server (MLflow), when one is configured."""

from .mlflow_export import MlflowExport, MlflowExporter

__all__ = ["MlflowExport", "MlflowExporter"]
