"""DAG docs rendered from the pipeline file, shown in the Airflow UI."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..timestamps import iso

if TYPE_CHECKING:
    from ..config.pipeline import PipelineConfig
    from ..errors import ConfigError


def dag_doc(cfg: PipelineConfig) -> str:
    src = cfg.source
    rows = [("Source", f"{src.describe_where()}: {src.describe()}"), ("Mode", cfg.mode),
            ("Bounds", src.describe_bounds(cfg.mode)), ("Schedule", cfg.schedule or "manual"),
            ("Start date", iso(cfg.start_date) if cfg.start_date is not None else "-"),
            ("Allowed lateness", f"{cfg.allowed_lateness // 1000}s"),
            ("Value format", cfg.decode.value.name), ("Output",
                                                 f"`{cfg.output.dataset(cfg.name)}` "
                                                 f"({cfg.output.format})"),
            ("Pipeline file", f"`{cfg.file}`")]
    table = "\n".join(f"| {k} | {v} |" for k, v in rows)
    try:
        text = Path(cfg.file).read_text()
    except OSError:
        text = ""
    return (f"# {cfg.name}\n\n{cfg.description}\n\n| | |\n|---|---|\n{table}\n\n"
            "Each run: **plan** (splits and lag, saved for retries) → **read** (Spark) → "
            "**commit** (verify, publish with `_manifest.json`, then advance the checkpoint "
            "kept in the output asset's state).\n\n"
            f"```yaml\n{text}\n```\n")


def error_doc(err: ConfigError) -> str:
    return (f"# Invalid pipeline file\n\n```\n{err}\n```\n\n"
            "Fix the file; run `streamslice validate`.")
