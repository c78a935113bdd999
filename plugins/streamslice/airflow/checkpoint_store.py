"""The checkpoint on Airflow asset state: one key, ``checkpoint``, on the pipeline's output
asset, written as a whole in one upsert. Inside tasks through ``context["asset_state_store"]``;
outside (CLI) through Airflow's state backend.

Read and reset a pipeline's checkpoint from outside a DAG run (CLI, operators' scripts)."""
from __future__ import annotations

import json
import time
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from ..commit.checkpoint import Checkpoint, reset
from ..errors import ConfigError
from ..ui.model import AssetExtra
from .hooks import source_properties

if TYPE_CHECKING:
    from collections.abc import Callable

    from pydantic.types import JsonValue

    from ..commit.lease import Lease
    from ..config.pipeline import PipelineConfig

KEY = "checkpoint"


def output_asset(cfg: PipelineConfig) -> Any:
    from airflow.sdk import Asset
    uri = cfg.output.dataset(cfg.name)
    if "://" not in uri:
        uri = "file://" + uri
    # What the Streamslice page needs to find the pipeline, and what its source adds (no
    # client settings, no secrets).
    extra = AssetExtra(str(cfg.file), cfg.source.kind,
                       cfg.alerts.freshness if cfg.alerts is not None else None,
                       cfg.source.asset_extra())
    as_json: dict[str, JsonValue] = dict(extra.to_dict())
    return Asset(name=f"streamslice/{cfg.name}", uri=uri, group="streamslice", extra=as_json)


class TaskCheckpointStore:
    """From a running task whose inlets or outlets hold the pipeline's asset."""

    def __init__(self, context: Any, asset: Any) -> None:
        self.state = context["asset_state_store"][asset]

    def get(self) -> Checkpoint | None:
        return Checkpoint.saved(self.state.get(KEY))

    def put(self, checkpoint: Checkpoint) -> None:
        self.state.set(KEY, checkpoint.to_dict())


class TaskMarks:
    """Progress marks (``planning.progress``) in a task's asset state store. That store has
    no compare-and-set, so a mark is read and written under a lease of its key in the work
    area (``commit.lease``), which makes ``replace`` atomic where the work area renames
    atomically (a local or shared POSIX file system). On object storage, where it cannot, a
    plan that took marks is also checked again ``SETTLE_S`` after, so a run whose write
    another run's replaced meanwhile plans again; only a run whose read and write of one key
    lie further apart than that can still go unseen there."""

    SETTLE_S = 1.0

    def __init__(self, state: Any, lease: Callable[[str], Lease]) -> None:
        self.state, self.lease = state, lease

    def settle(self) -> None:
        if not self.lease("marks").atomic:
            time.sleep(self.SETTLE_S)

    def get(self, key: str) -> Any:
        return self.state.get(key)

    def replace(self, key: str, old: Any, new: Any) -> bool:
        with self.lease(f"marks/{key}"):
            if self.state.get(key) != old:
                return False
            self.state.set(key, new)
            return bool(self.state.get(key) == new)


class OfflineAssetState:
    """One asset's state from outside a task (CLI, tests): direct metadata-database access
    through Airflow's state backend, values JSON as a task's ``asset_state_store`` keeps them."""

    def __init__(self, asset_name: str) -> None:
        self.asset_name = asset_name

    def _scope(self, session: Any, required: bool = True) -> Any:
        from airflow.models.asset import AssetModel
        from airflow.state import AssetScope
        from sqlalchemy import select
        asset_id = session.scalar(select(AssetModel.id).where(AssetModel.name == self.asset_name))
        if asset_id is None:
            if not required:
                return None
            raise LookupError(f"asset {self.asset_name!r} is not known to Airflow yet "
                              "(has the DAG been parsed?)")
        return AssetScope(asset_id=asset_id)

    def get(self, key: str) -> Any:
        """The value, or None when there is none (also before Airflow knows the DAG)."""
        from airflow.state import get_state_backend
        from airflow.utils.session import create_session
        with create_session() as session:
            scope = self._scope(session, required=False)
            raw = get_state_backend().get(scope, key, session=session) if scope else None
        return json.loads(raw) if raw else None

    def set(self, key: str, value: Any) -> None:
        from airflow.state import get_state_backend
        from airflow.utils.session import create_session
        with create_session() as session:
            get_state_backend().set(self._scope(session), key, json.dumps(value),
                                    session=session)


    def claim(self, key: str, value: Any, free: Callable[[Any], bool]) -> bool:
        """Atomically, in one transaction: write ``value`` under ``key`` when there is no value
        yet (an insert: of two at once, the key's uniqueness refuses one) or when the one there
        is ``free`` and still the same as it is written (an update of exactly that value); True
        when written. A task's asset state store has no such operation (``freshness``)."""
        from airflow.models.asset_state_store import AssetStateStoreModel as Row
        from airflow.utils.session import create_session
        from sqlalchemy import select, update
        from sqlalchemy.exc import IntegrityError
        raw = json.dumps(value)
        try:
            with create_session() as session:
                scope = self._scope(session)
                here = (Row.asset_id == scope.asset_id, Row.key == key)
                old = session.scalar(select(Row.value).where(*here))
                if old is None:
                    session.add(Row(asset_id=scope.asset_id, key=key, value=raw,
                                    updated_at=datetime.now(timezone.utc)))
                    session.flush()
                    return True
                if not free(json.loads(old)):
                    return False
                done = session.execute(update(Row).where(*here, Row.value == old).values(
                    value=raw, updated_at=datetime.now(timezone.utc)))
                return bool(done.rowcount == 1)  # type: ignore[attr-defined]
        except IntegrityError:  # another check inserted it between the read and the insert
            return False


class OfflineAssetStates:
    """A stand-in for a task context's ``asset_state_store`` outside tasks: ``[asset]`` gives
    that asset's ``OfflineAssetState``."""

    def __getitem__(self, asset: Any) -> OfflineAssetState:
        return OfflineAssetState(asset.name)


class OfflineCheckpointStore:
    """For the CLI and tests: the checkpoint through ``OfflineAssetState``."""

    def __init__(self, asset_name: str) -> None:
        self.state = OfflineAssetState(asset_name)

    def get(self) -> Checkpoint | None:
        """The checkpoint, or None when there is none (also before Airflow knows the DAG)."""
        return Checkpoint.saved(self.state.get(KEY))

    def put(self, checkpoint: Checkpoint) -> None:
        self.state.set(KEY, checkpoint.to_dict())


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
