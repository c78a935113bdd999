"""The commit protocol: verify the staged output against the plan, publish it once with its
manifest, clean up. The checkpoint advances only after this returns (``checkpoint.advance``).
"""
from __future__ import annotations

import logging
import re
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pyarrow.fs as pafs

from ..aws.storage import filesystem
from ..errors import CommitError, faults
from ..reading.staging import Staging
from .manifest import Manifest, build_manifest, plan_id
from .publishers import publisher_for
from .publishers.files import delete_if_there
from .verify import verify

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..planning.plan import OutputTarget, ReadPlan

log = logging.getLogger("streamslice")


def target_of(plan: ReadPlan[Any]) -> OutputTarget:
    if plan.output is None:
        raise CommitError("the plan names no output (plans made before version 2 cannot be "
                          "committed; clear the plan task to plan again)")
    return plan.output


def staging_for(plan: ReadPlan[Any], attempt: str) -> Staging:
    """The staging area of one read attempt: ``<work>/staging/<partition>/<attempt>``."""
    target = target_of(plan)
    return Staging(f"{target.work}/staging/{plan.partition}/{attempt}", target.auth)


def attempt_name(run_id: str, what: str) -> str:
    """A staging area's name: the run that commits it, then which read (``try3``, ``ahead``),
    so the area's owner is known from its name (``owner_of``)."""
    return f"{safe_name(run_id)}-{what}"


def owner_of(area: str) -> str:
    """The (``safe_name``) run an ``attempt_name`` area belongs to."""
    return area.rpartition("-")[0]


def safe_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", text)


def published_from(plan: ReadPlan[Any]) -> Manifest | None:
    """The manifest of ``plan``'s partition where this plan (its id) published it."""
    published = publisher_for(target_of(plan)).published_manifest(plan)
    return published if published and published.plan_id == plan_id(plan) else None


def publish_once(plan: ReadPlan[Any], staging: Staging, *, run_id: str | None, now_ms: int,
                 removable: Callable[[str], bool] | None = None) -> Manifest:
    """Publish the staged output and return its manifest with where it landed
    (``published``: the partition's URI, a table's snapshot or version), or recognise that an
    earlier try of the same plan already published it. A complete staging area is always
    published (a cleared or reprocessed run replaces its partition); one a crash left
    incomplete after the publish yields to the manifest that try published, and the clean-up
    that try did not reach (``Publisher.finish``) is done now. Then the staging areas of the
    partition that ``removable`` (an area's name) allows are removed (``clean_attempts``)."""
    publisher = publisher_for(target_of(plan))

    def ours() -> Manifest | None:  # looked up only when the staging area cannot publish
        return published_from(plan)

    if staging.fs.get_file_info(staging.root).type != pafs.FileType.NotFound:
        try:
            figures = verify(plan, staging)
        except CommitError:
            earlier = ours()
            if earlier is None:
                raise
            log.info("%s was published by an earlier try of this run; its staging area was "
                     "left incomplete by a crash.", plan.partition)
            publisher.finish(plan)
            clean_attempts(plan, removable)
            return earlier
        manifest = build_manifest(plan, figures, run_id=run_id, committed_at=now_ms)
        faults.check("before_publish")
        published = publisher.publish(plan, staging, manifest)
        clean_attempts(plan, removable)
        return replace(manifest, published=published)
    earlier = ours()
    if earlier is not None:
        log.info("%s was already published by an earlier try of this run.", plan.partition)
        publisher.finish(plan)
        clean_attempts(plan, removable)
        return earlier
    raise CommitError(f"the staged output {staging.uri} is gone and {plan.partition} was not "
                      "published from this plan; clear the read task (or the run, with tasks: "
                      "combined) to read it again")


def clean_attempts(plan: ReadPlan[Any], removable: Callable[[str], bool] | None = None) -> None:
    """Staging left by failed tries of the same partition: the areas ``removable`` allows
    (by name), never another run's that may still be read or committed (the default: all
    of them, for a caller that alone commits the partition). The partition's folder goes
    once it is empty."""
    target = target_of(plan)
    fs, work = filesystem(target.work, target.auth)
    path = f"{work}/staging/{plan.partition}"
    areas = fs.get_file_info(pafs.FileSelector(path, allow_not_found=True))
    kept = False
    for area in areas:
        if removable is None or removable(area.base_name):
            delete_if_there(fs, area.path)
        else:
            kept = True
    if not kept and fs.get_file_info(path).type == pafs.FileType.Directory:
        delete_if_there(fs, path)
