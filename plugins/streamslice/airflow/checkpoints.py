"""Read and reset a pipeline's checkpoint from outside a DAG run (CLI, operators' scripts)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..commit.checkpoint import Checkpoint, reset
from .hooks import source_properties
from .store import OfflineCheckpointStore, output_asset

if TYPE_CHECKING:
    from ..config.pipeline import PipelineConfig


def store_for(cfg: PipelineConfig) -> OfflineCheckpointStore:
    return OfflineCheckpointStore(output_asset(cfg).name)


def show_checkpoint(cfg: PipelineConfig) -> Checkpoint | None:
    return store_for(cfg).get()


def reset_checkpoint(cfg: PipelineConfig, to: Any) -> Checkpoint:
    """Point the checkpoint at ``to`` (as ``Source.reset_positions`` takes it). Run it while
    the pipeline is paused or idle: a run in flight would refuse to commit."""
    store = store_for(cfg)
    target = cfg.source.reset_positions(to, source_properties(cfg.source))
    new = reset(store.get(), target, note=f"reset to {to}")
    store.put(new)
    return new
