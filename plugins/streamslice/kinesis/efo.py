"""The Enhanced Fan-Out fetcher: SubscribeToShard, resubscribing from the continuation sequence
number when a subscription ends (every 5 minutes) or on a recoverable error, until the split's
bound, the tip, or the shard's end (an event with a null ContinuationSequenceNumber)."""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from ..errors import SourceError, StreamsliceError
from .client import call, error_code
from .polling import (
    CLOCK_WAIT_S,
    NOT_IN_SHARD,
    bound_passed,
    clock_error,
    emit,
    not_in_shard,
    records_args,
    resume_from,
    server_ms,
    shard_iterator,
    split_ref,
    stream_arg,
    stream_behind,
)
from .positions import AfterSequenceNumber

if TYPE_CHECKING:
    from collections.abc import Callable, Generator, Iterator

    from .polling import PollingSettings, Records, ShardRead
    from .positions import Position
    from .split import KinesisSplit

RECOVERABLE = {"ResourceInUseException", "LimitExceededException", "InternalFailure",
               "InternalFailureException", "ServiceUnavailable", "KMSThrottlingException"}


def subscribe(client: Any, split: KinesisSplit, consumer_arn: str, settings: PollingSettings,
              state: ShardRead, sleep: Callable[[float], None] = time.sleep
              ) -> Iterator[Records]:
    """Yield lists of record dicts from SubscribeToShard events; ``state`` is a ShardRead."""
    backoff = settings.backoff["subscribe_to_shard"]
    position: Position = split.start_position
    failures = 0
    waiting: list[float] = []  # since when it waits for the stream's clock (``polling``)
    while True:
        try:
            try:
                resp = call(client.subscribe_to_shard, f"SubscribeToShard({split.shard_id})",
                            backoff, retry_on=RECOVERABLE, sleep=sleep, passthrough=NOT_IN_SHARD,
                            ConsumerARN=consumer_arn, ShardId=split.shard_id,
                            StartingPosition=position.starting_position())
            except Exception as exc:  # noqa: BLE001 - not_in_shard re-raises what it does not name
                raise not_in_shard(exc, split, position) from None
            stream = resp["EventStream"]
            try:
                for event in stream:
                    ev = event.get("SubscribeToShardEvent")
                    if ev is None:
                        continue
                    outcome = yield from _event(ev, split, state)
                    if outcome == "done":
                        return
                    if outcome == "caught_up" and _ends(client, split, settings, state,
                                                        waiting):
                        return
                    cont = ev.get("ContinuationSequenceNumber")
                    position = AfterSequenceNumber(cont) if cont else position
            finally:
                stream.close()
            failures = 0
        except StreamsliceError:  # ours (an unreachable stream, a start not in the shard)
            raise
        except Exception as exc:  # noqa: BLE001 - the stream broke: classified by error_code below
            code = error_code(exc)
            failures += 1
            if failures > backoff.max_retries or (code not in RECOVERABLE and not _network(exc)):
                raise SourceError(f"{split.key}: SubscribeToShard stream failed: {code}: "
                                  f"{exc}") from None
            sleep(backoff.delay_s(failures))
        state.resubscriptions += 1


def _event(ev: dict[str, Any], split: KinesisSplit,
           state: ShardRead) -> Generator[Records, None, str | None]:
    records = ev.get("Records", [])
    state.behind(ev.get("MillisBehindLatest"))
    if (yield from emit(records, split, state)):
        return "done"
    if ev.get("ContinuationSequenceNumber") is None:  # the shard ended (ChildShards follow)
        state.finished = True
        return "done"
    if not records and ev.get("MillisBehindLatest") == 0:
        return "caught_up"
    return None


def _ends(client: Any, split: KinesisSplit, settings: PollingSettings, state: ShardRead,
          waiting: list[float]) -> bool:
    """Whether a caught-up subscription ends its read: a closed shard's once it ended, an
    open shard's once the stream's clock has passed the bound (meanwhile events may still
    bring records that arrived before it; ``waiting`` holds since when it waits)."""
    if split.closed:
        return _confirm_end(client, split, settings, state)
    behind = _behind(client, split, settings)
    if not behind:
        return True
    waiting[:] = waiting or [time.monotonic()]
    if time.monotonic() - waiting[0] > CLOCK_WAIT_S:
        raise clock_error(split, behind)
    return False


# (monotonic s, server ms) of the server's last answered clock in this process: it runs at
# this worker's rate, so a read whose bound it has passed since asks no more (the account's
# DescribeStreamSummary quota is small, and a job ends many shards' reads at once)
_SERVER: list[tuple[float, int]] = []


def _behind(client: Any, split: KinesisSplit, settings: PollingSettings) -> int:
    """``polling.stream_behind`` for a subscription, whose events carry no server time: the
    server's clock from a DescribeStreamSummary, asked only once this worker's clock has
    passed the bound."""
    if not bound_passed(split):
        return 0
    if _SERVER and _SERVER[0][1] + (time.monotonic() - _SERVER[0][0]) * 1000 >= \
            split.stop_before:
        return 0
    resp = call(client.describe_stream_summary, "DescribeStreamSummary",
                settings.backoff["get_records"], **stream_arg(split_ref(split)))
    if (server := server_ms(resp)) is not None:
        _SERVER[:] = [(time.monotonic(), server)]
    return stream_behind(resp, split)


def _confirm_end(client: Any, split: KinesisSplit, settings: PollingSettings,
                 state: ShardRead) -> bool:
    """A closed shard that looks caught up over EFO: one GetRecords says whether it ended."""
    resp = call(client.get_records, f"GetRecords({split.shard_id})",
                settings.backoff["get_records"],
                ShardIterator=shard_iterator(client, split, resume_from(split, state), settings),
                Limit=1, **records_args(split))
    if resp.get("NextShardIterator") is None and not resp.get("Records"):
        state.finished = True
        return True
    return False


def _network(exc: BaseException) -> bool:
    """A dropped connection (the event stream ended early): resubscribe."""
    from botocore.exceptions import BotoCoreError
    from urllib3.exceptions import HTTPError
    return isinstance(exc, (BotoCoreError, ConnectionError, OSError, HTTPError))
