"""Read and reset a pipeline's checkpoint from outside a DAG run (CLI, operators' scripts)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..commit.checkpoint import Checkpoint, reset
from ..errors import ConfigError
from .hooks import source_properties
from .store import OfflineCheckpointStore, output_asset

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..config.pipeline import PipelineConfig


def store_for(cfg: PipelineConfig) -> OfflineCheckpointStore:
    return OfflineCheckpointStore(output_asset(cfg).name)


def show_checkpoint(cfg: PipelineConfig) -> Checkpoint | None:
    return store_for(cfg).get()


def reset_checkpoint(cfg: PipelineConfig, to: Any,
                     confirm: Callable[[str], bool] | None = None) -> Checkpoint:
    """Point the checkpoint at ``to`` (as ``Planner.reset_positions`` takes it). Run it while
    the pipeline is paused or idle: a run in flight would refuse to commit. A reset that does
    more than ``to`` names (``ResetTarget.confirm``) is done only if ``confirm`` agrees."""
    store = store_for(cfg)
    target = cfg.source.planner().reset_positions(to, source_properties(cfg.source))
    if target.confirm and (confirm is None or not confirm(target.confirm)):
        raise ConfigError(f"reset not done: {target.confirm}. Name them too, or confirm "
                          "(streamslice offsets reset --yes)")
    new = reset(store.get(), target, note=f"reset to {to}")
    store.put(new)
    return new
