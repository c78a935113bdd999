"""The Kinesis split reader: fetch (polling or EFO) → de-aggregate → decode → Arrow batches;
dead letters and a summary (with MillisBehindLatest) go to the staging area."""
import pyarrow as pa

from .. import faults
from ..decode import TS, Decoder
from ..errors import DecodeError
from ..splitstats import SplitStats
from .client import make_client
from .deaggregate import deaggregate
from .efo import subscribe
from .polling import PollingSettings, ShardRead, arrival_ms, poll

_META = [("stream", pa.string()), ("shardId", pa.string()), ("sequenceNumber", pa.string()),
         ("subSequenceNumber", pa.int64()), ("partitionKey", pa.string()),
         ("approximateArrivalTimestamp", TS)]


def record_schema(decoder):
    """Columns as Spark's Kinesis connectors name them; json values become top-level fields."""
    return pa.schema([*decoder.value_fields("data"), *_META])


DEAD_LETTER_SCHEMA = pa.schema([("data", pa.binary()), *_META, ("error", pa.string())])


class KinesisSplitReader:
    def __init__(self, split, *, properties=None, decoder=None, staging=None, settings=None,
                 consumer_arn=None, client=None, fault=None):
        self.split, self.decoder = split, decoder or Decoder()
        self.staging, self.fault = staging, fault
        self.settings = settings or PollingSettings()
        self.consumer_arn = consumer_arn
        self.client = client or make_client(properties)
        self.schema = record_schema(self.decoder)
        self.stats, self.state = SplitStats(split), ShardRead()
        self._dead = []

    def batches(self):
        if self.consumer_arn:
            source = subscribe(self.client, self.split, self.consumer_arn, self.settings,
                               self.state)
        else:
            source = poll(self.client, self.split, self.settings, self.state)
        for records in source:
            self.stats.scanned([r["SequenceNumber"] for r in records])
            batch = self._to_arrow(records)
            if batch.num_rows:
                yield batch
            faults.check("read", self.split.id, self.stats.d["scanned"], self.fault)
        self.stats.reached_stop()
        self.stats.note(finished=self.state.finished, last_seq=self.state.last_seq,
                        millis_behind_latest=self.state.millis_behind_first,
                        millis_behind_latest_end=self.state.millis_behind_last,
                        calls=self.state.calls, expired_iterators=self.state.expired_iterators,
                        resubscriptions=self.state.resubscriptions,
                        reader="efo" if self.consumer_arn else "polling")
        self._finish()

    def _to_arrow(self, records):
        rows = []  # (seq, sub, key, arrival, data)
        for r in records:
            arrival = arrival_ms(r)
            for sub, key, data in deaggregate(r["Data"], r["PartitionKey"]):
                rows.append((r["SequenceNumber"], sub, key, arrival, data))
        seqs, subs, keys, arrivals, datas = (list(c) for c in zip(*rows)) if rows else \
            ([], [], [], [], [])
        value_cols, errors = self.decoder.decode_values(datas)
        if errors and self.decoder.on_error == "fail":
            row = min(errors)
            raise DecodeError(f"{self.split.key} sequence number {seqs[row]}: {errors[row]} "
                              "(format.on_error is fail)")
        if errors:
            bad = sorted(errors)
            self.stats.dead_letters(len(bad))
            self._dead.append(pa.RecordBatch.from_arrays(
                [pa.array([datas[i] for i in bad], pa.binary()),
                 *self._meta([seqs[i] for i in bad], [subs[i] for i in bad],
                             [keys[i] for i in bad], [arrivals[i] for i in bad]),
                 pa.array([errors[i] for i in bad], pa.string())], schema=DEAD_LETTER_SCHEMA))
            good = [i for i in range(len(rows)) if i not in errors]
            seqs, subs, keys, arrivals = ([c[i] for i in good] for c in (seqs, subs, keys,
                                                                          arrivals))
            value_cols = [[c[i] for i in good] for c in value_cols]
        values = [pa.array(v, f.type) for v, f in zip(value_cols, self.schema)]
        meta = self._meta(seqs, subs, keys, arrivals)
        self.stats.kept(seqs, pa.array(arrivals, pa.int64()), None,
                        sum(a.nbytes for a in values))
        return pa.RecordBatch.from_arrays([*values, *meta], schema=self.schema)

    def _meta(self, seqs, subs, keys, arrivals):
        n = len(seqs)
        return [pa.array([self.split.stream] * n, pa.string()),
                pa.array([self.split.shard_id] * n, pa.string()),
                pa.array(seqs, pa.string()), pa.array(subs, pa.int64()),
                pa.array(keys, pa.string()),
                pa.array(arrivals, pa.int64()).cast(pa.timestamp("ms", tz="UTC")).cast(TS)]

    def _finish(self):
        if self.staging is not None:
            self.staging.finish_split(self.split.id, self._dead, DEAD_LETTER_SCHEMA,
                                      self.stats.to_dict())
