"""The shared split-reader loop (reading.loop) with a fake source reader that covers the loop's
own logic: garbage collection is paused while a batch is fetched and converted, and only
then."""
import gc

import pyarrow as pa
import pytest

from streamslice.errors import SourceError
from streamslice.kafka.split import KafkaSplit
from streamslice.reading.decode import Decoder
from streamslice.reading.loop import SplitReader


def Split():  # noqa: N802 - any source's split does: the loop only uses the contract
    return KafkaSplit(id=0, topic="t", partition=0, start=0, stop=0)


class FakeReader(SplitReader):
    dead_letter_schema = pa.schema([("v", pa.int64())])

    def __init__(self, fail_at=None):
        super().__init__(Split(), decoder=Decoder())
        self.fail_at, self.seen = fail_at, []

    def fetch(self):
        for i in range(3):
            self.seen.append(("fetch", gc.isenabled()))
            if i == self.fail_at:
                raise SourceError("broken")
            yield [i]

    def positions(self, raw):
        return raw

    def to_arrow(self, raw):
        self.seen.append(("to_arrow", gc.isenabled()))
        return pa.RecordBatch.from_pydict({"v": raw})


def test_collection_is_paused_per_batch_and_resumes_for_the_caller():
    reader = FakeReader()
    outside = [gc.isenabled() for _ in reader.batches()]
    assert outside == [True, True, True] and gc.isenabled()
    assert {enabled for _, enabled in reader.seen} == {False}
    assert reader.stats.summary.scanned == 3 and reader.stats.summary.reached_stop


def test_collection_resumes_after_a_failed_fetch():
    with pytest.raises(SourceError, match="broken"):
        list(FakeReader(fail_at=1).batches())
    assert gc.isenabled()


def test_a_caller_that_disabled_collection_keeps_it_disabled():
    gc.disable()
    try:
        list(FakeReader().batches())
        assert not gc.isenabled()
    finally:
        gc.enable()
