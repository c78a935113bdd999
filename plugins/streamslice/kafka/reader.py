"""The Kafka split reader (FLIP-27's SourceReader): fetch → keep what the run owns → decode →
Arrow record batches; dead letters and a summary go to the staging area."""
import pyarrow as pa
import pyarrow.compute as pc

from ..decode import TS, Decoder
from .. import faults
from ..errors import DecodeError
from ..interval import classify
from ..splitstats import SplitStats
from .fetch import fetch

HEADERS = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
_META = [("topic", pa.string()), ("partition", pa.int32()), ("offset", pa.int64()),
         ("timestamp", TS), ("timestampType", pa.int32())]


def record_schema(decoder, interval_mode):
    """Columns as Spark's Kafka source names them; json values become top-level fields."""
    fields = [pa.field("key", decoder.key_field().type), *decoder.value_fields(), *_META,
              pa.field("headers", HEADERS)]
    if interval_mode:
        fields.append(pa.field("is_late", pa.bool_()))
    return pa.schema(fields)


DEAD_LETTER_SCHEMA = pa.schema([("key", pa.binary()), ("value", pa.binary()), *_META,
                                ("headers", HEADERS), ("error", pa.string())])


class KafkaSplitReader:
    def __init__(self, split, *, properties, client="confluent-kafka", decoder=None,
                 interval=None, staging=None, batch_size=10_000, idle_timeout_s=60.0,
                 fault=None):
        self.split, self.properties, self.client = split, properties, client
        self.decoder = decoder or Decoder()
        self.interval, self.staging = interval, staging
        self.batch_size, self.idle_timeout_s = batch_size, idle_timeout_s
        self.fault = fault
        self.schema = record_schema(self.decoder, interval is not None)
        self.stats = SplitStats(split)
        self._dead = []

    def batches(self):
        for raw in fetch(self.client, self.split, self.properties,
                         batch_size=self.batch_size, idle_timeout_s=self.idle_timeout_s):
            self.stats.scanned(raw.offsets)
            batch = self._to_arrow(raw)
            if batch is not None and batch.num_rows:
                yield batch
            faults.check("read", self.split.id, self.stats.d["scanned"], self.fault)
        self.stats.reached_stop()
        self._finish()

    def _to_arrow(self, raw):
        n = len(raw.offsets)
        offsets = pa.array(raw.offsets, pa.int64())
        ts = pa.array(raw.timestamps, pa.int64())
        cols = {"offset": offsets, "timestamp": ts,
                "timestampType": pa.array(raw.timestamp_types, pa.int32()),
                "key": raw.keys, "value": raw.values, "headers": raw.headers}
        late = None
        if self.interval is not None:
            on_time, late_mask = classify(ts, offsets, self.interval,
                                          self.split.late_from, self.split.owned_until)
            keep = pc.or_(on_time, late_mask)
            kept_idx = pc.indices_nonzero(keep).to_pylist()
            if len(kept_idx) != n:
                cols = _take(cols, kept_idx)
                offsets, ts = cols["offset"], cols["timestamp"]
                late_mask = late_mask.take(pa.array(kept_idx, pa.int64()))
            late = late_mask
            self.stats.outside(n - len(kept_idx))
        keys, key_errors = self.decoder.decode_keys(cols["key"])
        value_cols, value_errors = self.decoder.decode_values(cols["value"])
        errors = {**value_errors, **key_errors}
        if errors:
            if self.decoder.on_error == "fail":
                row = min(errors)
                raise DecodeError(f"{self.split.key} offset {offsets[row].as_py()}: "
                                  f"{errors[row]} (format.on_error is fail)")
            self._dead.append(self._dead_letters(cols, offsets, ts, errors))
            good = [i for i in range(len(offsets)) if i not in errors]
            idx = pa.array(good, pa.int64())
            keys = [keys[i] for i in good]
            value_cols = [[c[i] for i in good] for c in value_cols]
            cols = _take(cols, good)
            offsets, ts = cols["offset"], cols["timestamp"]
            if late is not None:
                late = late.take(idx)
        arrays = [pa.array(keys, self.schema.field("key").type)]
        for fld, values in zip(self.schema.names[1:1 + len(value_cols)], value_cols):
            arrays.append(pa.array(values, self.schema.field(fld).type))
        payload = _bytes(arrays[:1 + len(value_cols)])
        count = len(offsets)
        arrays += [pa.repeat(pa.scalar(self.split.topic, pa.string()), count),
                   pa.repeat(pa.scalar(self.split.partition, pa.int32()), count),
                   offsets, _ts(ts), cols["timestampType"], _headers(cols["headers"])]
        if late is not None:
            arrays.append(late)
        self.stats.kept(offsets, ts, late, payload)
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)

    def _dead_letters(self, cols, offsets, ts, errors):
        rows = sorted(errors)
        idx = pa.array(rows, pa.int64())
        self.stats.dead_letters(len(rows))
        return pa.RecordBatch.from_arrays([
            pa.array([cols["key"][i] for i in rows], pa.binary()),
            pa.array([cols["value"][i] for i in rows], pa.binary()),
            pa.array([self.split.topic] * len(rows), pa.string()),
            pa.array([self.split.partition] * len(rows), pa.int32()),
            offsets.take(idx), _ts(ts.take(idx)), cols["timestampType"].take(idx),
            pa.array([cols["headers"][i] for i in rows], HEADERS),
            pa.array([errors[i] for i in rows], pa.string())], schema=DEAD_LETTER_SCHEMA)

    def _finish(self):
        if self.staging is not None:
            self.staging.finish_split(self.split.id, self._dead, DEAD_LETTER_SCHEMA,
                                      self.stats.to_dict())


def _headers(headers):
    if any(h is not None for h in headers):
        return pa.array(headers, HEADERS)
    return pa.nulls(len(headers), HEADERS)  # the common case: no headers at all


def _take(cols, idx):
    arr_idx = pa.array(idx, pa.int64())
    out = {}
    for name, col in cols.items():
        out[name] = col.take(arr_idx) if isinstance(col, pa.Array) else [col[i] for i in idx]
    return out


def _ts(ms_array):
    return ms_array.cast(pa.timestamp("ms", tz="UTC")).cast(TS)


def _bytes(arrays):
    """Payload bytes of binary/string columns (decoded fields count by their Arrow size)."""
    total = 0
    for arr in arrays:
        if pa.types.is_binary(arr.type) or pa.types.is_string(arr.type):
            total += pc.sum(pc.binary_length(arr)).as_py() or 0
        else:
            total += arr.nbytes
    return total
