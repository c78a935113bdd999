"""The polling fetcher: GetShardIterator + GetRecords over one shard until the split's bound.

Retries throttling (ProvisionedThroughputExceeded, LimitExceeded) with full-jitter backoff and
re-acquires an expired iterator from the last sequence number read. A shard ends when
``NextShardIterator`` is null (never trust ``EndingSequenceNumber``); an open shard's read ends
when it is caught up (no records, MillisBehindLatest 0) or at the first record that arrived at
or after the bound.

Caught up closes the read only once the stream's clock has passed the bound: arrival times are
the server's, so where this worker's clock runs ahead of it (the run took its interval for
closed), a record can still arrive before the bound. The server's clock is its responses'
``Date`` header (to the second): while it is before a bound this worker's clock has passed,
the read keeps polling (``CLOCK_WAIT_S`` at most). A bound still ahead of this worker's clock
(a stop timestamp in the future) ends at the tip, as a bounded read does."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any

from ..errors import SourceError
from .client import DEFAULT_BACKOFF, Backoff, call, error_code
from .positions import NO_BOUND, AfterSequenceNumber, Position

if TYPE_CHECKING:
    from collections.abc import Callable, Generator, Iterator

    from ..records import JsonObject
    from .client import Answer, ApiArgs, Record
    from .split import KinesisSplit

    Records = list[Record]


@dataclass
class PollingSettings:
    max_records: int = 10_000
    interval_ms: int = 200
    backoff: dict[str, Backoff] = field(default_factory=lambda: dict(DEFAULT_BACKOFF))

    def to_dict(self) -> JsonObject:
        """As the plan's ``source_info`` carries them to the readers."""
        return {"max_records": self.max_records, "interval_ms": self.interval_ms,
                "backoff": {k: [b.max_retries, b.base_ms, b.max_ms, b.exponent]
                            for k, b in self.backoff.items()}}

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> PollingSettings:
        if not data:
            return cls()
        backoff = dict(DEFAULT_BACKOFF)
        backoff.update({k: Backoff(*v) for k, v in data.get("backoff", {}).items()})
        return cls(max_records=data["max_records"], interval_ms=data["interval_ms"],
                   backoff=backoff)


class ShardRead:
    """What a fetcher learnt about the shard, filled in as it reads."""

    def __init__(self) -> None:
        self.finished = False  # reached SHARD_END
        self.millis_behind_first: int | None = None
        self.millis_behind_last: int | None = None
        self.last_seq: str | None = None
        self.calls = 0
        self.expired_iterators = 0
        self.resubscriptions = 0

    def behind(self, millis: int | None) -> None:
        if millis is None:
            return
        if self.millis_behind_first is None:
            self.millis_behind_first = millis
        self.millis_behind_last = millis


def stream_arg(ref: str) -> ApiArgs:
    """``StreamARN`` where we have it (what a stream in another account needs, through its
    resource policy), else ``StreamName``."""
    return {"StreamARN": ref} if ref.startswith("arn:") else {"StreamName": ref}


def stream_arn_arg(ref: str) -> ApiArgs:
    """``StreamARN`` for calls that take only it besides the iterator (GetRecords)."""
    return {"StreamARN": ref} if ref.startswith("arn:") else {}


def iterator_args(ref: str, shard_id: str, position: Position) -> ApiArgs:
    return {**stream_arg(ref), "ShardId": shard_id, **position.iterator_args()}


def split_ref(split: KinesisSplit) -> str:
    return split.stream_arn or split.stream


def shard_iterator(client: Any, split: KinesisSplit, position: Position,
                   settings: PollingSettings) -> str:
    try:
        resp = call(client.get_shard_iterator, f"GetShardIterator({split.shard_id})",
                    settings.backoff["get_shard_iterator"], passthrough=NOT_IN_SHARD,
                    **iterator_args(split_ref(split), split.shard_id, position))
    except Exception as exc:  # noqa: BLE001 - not_in_shard re-raises what it does not name
        raise not_in_shard(exc, split, position) from None
    iterator: str = resp["ShardIterator"]
    return iterator


# A sequence number that is not in the shard: AWS answers InvalidArgumentException, some
# servers ResourceNotFoundException ("Unable to find record with provided SequenceNumber").
NOT_IN_SHARD = ("InvalidArgumentException", "ResourceNotFoundException")


def not_in_shard(exc: Exception, split: KinesisSplit, position: Position) -> Exception:
    """What a NOT_IN_SHARD answer to a start at ``position`` is: a sequence number the user or
    a reset gave that is not in the shard is a configuration error (retrying cannot help);
    anything else (the stream or shard gone) a source error."""
    from ..errors import ConfigError
    response = getattr(exc, "response", None)
    code = error_code(exc)
    if not isinstance(response, dict) or code not in NOT_IN_SHARD:
        return exc
    message = str(response.get("Error", {}).get("Message", ""))
    seq = getattr(position, "seq", None)
    if seq is not None and "sequencenumber" in message.lower().replace(" ", ""):
        return ConfigError(f"{split.key}: sequence number {seq} is not in shard "
                           f"{split.shard_id} ({code}: {message}); give one that is "
                           "(kinesis.start, or streamslice offsets reset)")
    return SourceError(f"{split.key}: Kinesis {code}: {message}".rstrip(": "))


def records_args(split: KinesisSplit) -> ApiArgs:
    return stream_arn_arg(split_ref(split))


def resume_from(split: KinesisSplit, state: ShardRead) -> Position:
    """Where to pick a shard up again: after the last record read, else the split's start."""
    return AfterSequenceNumber(state.last_seq) if state.last_seq else split.start_position


def arrival_ms(record: Record) -> int:
    return int(round(record["ApproximateArrivalTimestamp"].timestamp() * 1000))


def take_until(records: Records, stop_before: int) -> tuple[Records, bool]:
    """Records before the first one that arrived at or after the bound, and whether it came."""
    for i, r in enumerate(records):
        if arrival_ms(r) >= stop_before:
            return records[:i], True
    return records, False


def emit(records: Records, split: KinesisSplit,
         state: ShardRead) -> Generator[Records, None, bool]:
    """Yield the records that arrived before the split's bound; return whether it was hit."""
    kept, bound_reached = take_until(records, split.stop_before)
    if kept:
        state.last_seq = kept[-1]["SequenceNumber"]
        yield kept
    return bound_reached


CLOCK_WAIT_S = 300.0  # how long a caught-up read waits for the stream's clock to pass the bound
CLOCK_POLL_S = 0.2  # GetRecords pacing meanwhile, at least


def wall_ms() -> int:
    """This worker's clock."""
    return int(time.time() * 1000)


def server_ms(resp: Answer) -> int | None:
    """The server's clock when it answered (its ``Date`` header), if it said."""
    date = resp.get("ResponseMetadata", {}).get("HTTPHeaders", {}).get("date")
    try:
        return int(parsedate_to_datetime(date).timestamp() * 1000) if date else None
    except (TypeError, ValueError):
        return None


def bound_passed(split: KinesisSplit) -> bool:
    """Whether this worker's clock has passed the split's bound (there is one)."""
    return split.stop_before < NO_BOUND and wall_ms() >= split.stop_before


def stream_behind(resp: Answer, split: KinesisSplit) -> int:
    """How far (ms) the stream's clock is still before a bound this worker's clock has
    passed; 0 when the read may end (no bound, a future one, or no clock to go by)."""
    server = server_ms(resp)
    if not bound_passed(split) or server is None:
        return 0
    return max(0, split.stop_before - server)


def clock_error(split: KinesisSplit, behind: int) -> SourceError:
    return SourceError(f"{split.key}: the Kinesis server's clock is still {behind / 1000:.0f}s "
                       f"before the interval's end after {CLOCK_WAIT_S:.0f}s; this worker's "
                       "clock runs ahead of it (synchronise the clocks); retry later")


def poll(client: Any, split: KinesisSplit, settings: PollingSettings, state: ShardRead,
         sleep: Callable[[float], None] = time.sleep,
         clock: Callable[[], float] = time.monotonic) -> Iterator[Records]:
    """Yield lists of boto3 record dicts; ``state`` (a ShardRead) says how the read ended."""
    iterator = shard_iterator(client, split, split.start_position, settings)
    last_call: float | None = None
    waiting_since: float | None = None  # for the stream's clock (see above)
    while True:
        if last_call is not None:
            pace = settings.interval_ms / 1000 if waiting_since is None else \
                max(settings.interval_ms / 1000, CLOCK_POLL_S)
            wait = pace - (clock() - last_call)
            if wait > 0:
                sleep(wait)
        last_call = clock()
        try:
            resp = call(client.get_records, f"GetRecords({split.shard_id})",
                        settings.backoff["get_records"], passthrough=("ExpiredIteratorException",),
                        sleep=sleep, ShardIterator=iterator, Limit=settings.max_records,
                        **records_args(split))
        except Exception as exc:
            if error_code(exc) != "ExpiredIteratorException":
                raise
            state.expired_iterators += 1
            if state.expired_iterators > settings.backoff["get_shard_iterator"].max_retries + 10:
                raise SourceError(f"{split.key}: shard iterator keeps expiring") from None
            iterator = shard_iterator(client, split, resume_from(split, state), settings)
            continue
        state.calls += 1
        records = resp.get("Records", [])
        state.behind(resp.get("MillisBehindLatest"))
        if (yield from emit(records, split, state)):
            return
        iterator = resp.get("NextShardIterator")
        if iterator is None:
            state.finished = True
            return
        if not records and resp.get("MillisBehindLatest") == 0:
            behind = stream_behind(resp, split)
            if not behind:
                return  # caught up with the tip: everything before the bound has been read
            waiting_since = clock() if waiting_since is None else waiting_since
            if clock() - waiting_since > CLOCK_WAIT_S:
                raise clock_error(split, behind)
