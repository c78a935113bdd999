"""JSON against Spark's own ``from_json``, on generated records: each field drawn from values
of every JSON kind (edge numbers, numeric and date-like strings, wrong types, nulls, missing),
read by our decoder and by ``from_json`` in the test session's Spark (mode PERMISSIVE with a
corrupt-record column, so a partial row is seen as the failure it is). Where Spark reads a
whole row, ours is the same row; where Spark marks the record corrupt, ours is a dead letter.
They may differ only where the formats page lists a deliberate difference, each checked on
the value itself: Spark reads it and we keep it as a dead letter (any JSON value into a
STRING, a number beyond FLOAT or with more decimal places than its DECIMAL, lenient date and
timestamp text, years outside 1-9999, a zone name after a timestamp)."""
import json
import random
import re
from decimal import Decimal

import pyarrow as pa
import pytest

from streamslice.formats import FormatSpec
from streamslice.formats.json import Json

pytestmark = pytest.mark.integration

DDL = ("i INT, l BIGINT, d DOUBLE, f FLOAT, dec DECIMAL(6,2), day DATE, t TIMESTAMP, s STRING, "
       "b BOOLEAN, arr ARRAY<INT>, m MAP<STRING, BIGINT>, st STRUCT<x: INT, y: STRING>")
POOL = [0, 1, -1, 127, 2**31 - 1, 2**31, -2**31 - 1, 2**63 - 1, 2**63, 1.0, 1.5, -0.0, 1e39,
        1e308, 12.345, 1714521600, "1", "1.5", "NaN", "Infinity", "-INF", "nan", "true",
        "2024-05-01", "2024-5-1", "2024-05-01T10:00:00Z", "2024-05-01 10:00:00",
        "2024-05-01T10:00:00+02:00", "20240501", "19000", "x", "", True, False, None,
        "20240501T100000Z", "2024-W18-3",
        "2024-05-01T10", "2024-05-01T10:00:00+0200", "2024-05-01T1000", "2024-122",
        "2024-05-01T10:00:00UTC", " 2024-05-01T10:00:00Z ", "2024-05-01T10:00:00.5+02",
        [], [1, 2], [1, "a"], [None], {}, {"x": 1}, {"x": "1"}, {"k": 5}, {"k": None},
        {"x": 1, "y": "a"}]
FIELDS = ["i", "l", "d", "f", "dec", "day", "t", "s", "b", "arr", "m", "st"]
MISSING = object()
ISO_DAY = re.compile(r"\s*\d{4}-\d{2}-\d{2}")


def _deliberate(text: str, reason: str) -> bool:
    """Whether the field our reason names holds a value the formats page lists as read by
    from_json and refused here on purpose."""
    found = re.match(r"field '(\w+)'", reason)
    if not found:
        return False
    name = found.group(1)
    value = json.loads(text).get(name)
    if name == "s":  # from_json writes any JSON value into a STRING as its text
        return not isinstance(value, str)
    if name == "f":  # from_json makes a number beyond FLOAT Infinity
        return isinstance(value, (int, float)) and abs(value) > 3.4028235e38
    if name == "dec" and isinstance(value, (int, float)):  # from_json rounds to the scale
        exponent = Decimal(str(value)).as_tuple().exponent  # 'F' for an infinity, 'n' NaN
        return isinstance(exponent, int) and exponent < -2
    if name == "t" and isinstance(value, int):  # epoch seconds beyond year 9999: from_json
        return not -62135596800 <= value <= 253402300799  # overflows (2**63-1 → 1969-12-31)
    if name in ("t", "day"):  # lenient text, years beyond 9999, zone names
        return isinstance(value, str) and (not ISO_DAY.match(value) or value.endswith("UTC"))
    return False


GOOD = {"i": 7, "l": 2**40, "d": 0.25, "f": 1.5, "dec": 12.34, "day": "2024-05-01",
        "t": "2024-05-01T10:00:00Z", "s": "x", "b": True, "arr": [1, 2], "m": {"k": 1},
        "st": {"x": 1, "y": "a"}}


def _records(n: int, seed: int) -> list[str]:
    """A good record with one or two fields replaced by a value of the pool, or left out."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        record = dict(GOOD)
        for name in rng.sample(FIELDS, rng.choice([1, 1, 2])):
            value = rng.choice([*POOL, MISSING])
            if value is MISSING:
                del record[name]
            else:
                record[name] = value
        out.append(json.dumps(record))
    return out


def test_generated_records_read_as_from_json_reads_them(spark):
    from pyspark.sql.functions import col, from_json, struct, to_json
    spark.conf.set("spark.sql.session.timeZone", "UTC")  # text without an offset is UTC here
    texts = _records(1500, seed=8)
    fmt = Json(FormatSpec("json", DDL))
    arrays, errors = fmt.decode([t.encode() for t in texts])
    names = [f.name for f in fmt.fields("value")]
    # both sides as Spark renders them (to_json), so values Python cannot hold compare too
    ours = [r[0] for r in spark.createDataFrame(pa.Table.from_arrays(arrays, names=names))
            .select(to_json(struct(*FIELDS))).collect()]
    theirs = (spark.createDataFrame([(t,) for t in texts], "value STRING")
              .select(from_json(col("value"), DDL + ", _corrupt STRING",
                                {"columnNameOfCorruptRecord": "_corrupt"}).alias("v"))
              .select(to_json(struct(*[f"v.{f}" for f in FIELDS])), "v._corrupt").collect())
    same = lenient = refused = 0
    for i, text in enumerate(texts):
        spark_row, corrupt = theirs[i]
        if corrupt is not None:
            assert i in errors, f"{text}: from_json marks it corrupt, we kept a row"
            refused += 1
        elif i in errors:
            assert _deliberate(text, errors[i]), \
                f"{text}: from_json reads it as {spark_row}, we said {errors[i]!r}"
            lenient += 1
        else:
            assert ours[i] == spark_row, text
            same += 1
    assert same > 30 and refused > 300, (same, lenient, refused)
