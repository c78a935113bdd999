"""Pipeline files: YAML → a validated, typed ``PipelineConfig``."""
from .pipeline import (
                       Decoding,
                       Output,
                       PipelineConfig,
                       load_pipeline,
                       load_pipelines,
                       parse_pipeline,
)

__all__ = ["Decoding", "Output", "PipelineConfig", "load_pipeline", "load_pipelines",
           "parse_pipeline"]
