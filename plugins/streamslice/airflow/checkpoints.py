"""Read and reset a pipeline's checkpoint from outside a DAG run (CLI, operators' scripts)."""
from ..offsets import reset, reset_positions
from .hooks import source_properties
from .store import OfflineCheckpointStore, output_asset


def store_for(cfg):
    return OfflineCheckpointStore(output_asset(cfg).name)


def show_checkpoint(cfg):
    return store_for(cfg).get()


def reset_checkpoint(cfg, to):
    """Point the checkpoint at ``to`` (earliest, latest, {timestamp: …}, {offsets: {…}}).
    Run it while the pipeline is paused or idle: a run in flight would refuse to commit."""
    store = store_for(cfg)
    positions = reset_positions(cfg.source, to, source_properties(cfg.source))
    new = reset(store.get(), positions, note=f"reset to {to}")
    store.put(new)
    return new
