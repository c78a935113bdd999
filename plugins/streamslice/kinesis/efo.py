"""The Enhanced Fan-Out fetcher: SubscribeToShard, resubscribing from the continuation sequence
number when a subscription ends (every 5 minutes) or on a recoverable error, until the split's
bound, the tip, or the shard's end (an event with a null ContinuationSequenceNumber)."""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from ..errors import SourceError, StreamsliceError
from .client import call, error_code
from .polling import NOT_IN_SHARD, emit, not_in_shard, records_args, resume_from, shard_iterator
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
                    if outcome == "caught_up":
                        if not split.closed or _confirm_end(client, split, settings, state):
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
