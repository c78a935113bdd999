"""``spark.readStream.format("streamslice-files")`` on the suite's one Spark session: a folder's
JSON Lines files read by the batch readers and decoders, offsets (``{"file": lines}``) in the
query's checkpoint, Spark's file source's read limits (``maxFilesPerTrigger``,
``maxBytesPerTrigger``), Trigger.AvailableNow, Once and processing time, and files and lines
that arrive while the query runs read in a later batch, each line once."""
import json
import os

import pytest

from tests.support.wait import wait_for

pytestmark = pytest.mark.integration


def lines(*numbers):
    return b"".join(json.dumps({"n": n}).encode() + b"\n" for n in numbers)


def write(folder, name, numbers, age=0):
    """A file of records ``{"n": ...}``, its modification time ``age`` seconds in the past
    (the limits take the oldest file first)."""
    path = folder / name
    path.write_bytes(lines(*numbers))
    when = 1_700_000_000 - age
    os.utime(path, (when, when))
    return path


def stream(spark, folder, **options):
    r = spark.readStream.format("streamslice-files").option("pattern", "*.jsonl") \
        .option("valueFormat", "json").option("schema", "n long")
    for key, value in options.items():
        r = r.option(key, value)
    return r.load(str(folder))


class Run:
    """One query into Spark's file sink, beside its checkpoint."""

    def __init__(self, spark, df, checkpoint, trigger=None):
        self.spark, self.output = spark, f"{checkpoint}-out"
        self.query = df.select("n", "file", "line").writeStream.format("parquet") \
            .option("path", self.output).option("checkpointLocation", str(checkpoint)) \
            .trigger(**(trigger or {"availableNow": True})).start()

    def finish(self):
        self.query.awaitTermination(180)
        assert not self.query.isActive, "the query did not stop"
        return self

    def rows(self):
        from pyspark.errors import AnalysisException
        try:
            rows = self.spark.read.parquet(self.output).collect()
        except AnalysisException:  # nothing written yet
            return []
        return sorted((r.file, r.line, r.n) for r in rows)

    def numbers(self):
        return sorted(n for _, _, n in self.rows())

    def batches(self):
        return [p["numInputRows"] for p in self.query.recentProgress if p["numInputRows"]]

    def end_offset(self):
        return json.loads(self.query.lastProgress["sources"][0]["endOffset"])


def test_available_now_reads_every_complete_line_then_what_was_added(spark, tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    write(folder, "a.jsonl", [0, 1])
    (folder / "b.jsonl").write_bytes(lines(2) + b'{"n": 3')  # a line still being written
    (folder / "_hidden.jsonl").write_bytes(lines(99))
    first = Run(spark, stream(spark, folder), tmp_path / "cp").finish()
    assert first.rows() == [("a.jsonl", 0, 0), ("a.jsonl", 1, 1), ("b.jsonl", 0, 2)]
    assert first.end_offset() == {"a.jsonl": 2, "b.jsonl": 1}

    with open(folder / "b.jsonl", "ab") as f:
        f.write(b"}\n" + lines(4))
    (folder / "sub").mkdir()
    write(folder, "sub/c.jsonl", [5])
    again = Run(spark, stream(spark, folder), tmp_path / "cp").finish()
    assert again.numbers() == [0, 1, 2, 3, 4, 5]  # the output holds each line once
    assert again.batches() == [3]
    assert again.end_offset() == {"a.jsonl": 2, "b.jsonl": 3, "sub/c.jsonl": 1}
    idle = Run(spark, stream(spark, folder), tmp_path / "cp").finish()
    assert idle.batches() == []


def test_maxFilesPerTrigger_reads_the_oldest_files_first(spark, tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    write(folder, "new.jsonl", [20, 21], age=0)
    write(folder, "old.jsonl", [0, 1, 2], age=200)
    write(folder, "mid.jsonl", [10], age=100)
    run = Run(spark, stream(spark, folder, maxFilesPerTrigger="1"), tmp_path / "cp").finish()
    assert run.batches() == [3, 1, 2]
    assert run.numbers() == [0, 1, 2, 10, 20, 21]
    once = Run(spark, stream(spark, folder, maxFilesPerTrigger="1"), tmp_path / "once",
               trigger={"once": True}).finish()
    assert once.batches() == [6]  # Trigger.Once reads all that is there, whatever the limit


def test_maxBytesPerTrigger_is_a_soft_limit_of_whole_files(spark, tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    for i in range(4):
        write(folder, f"{i}.jsonl", [i * 10, i * 10 + 1], age=100 - i)  # 20 bytes each
    run = Run(spark, stream(spark, folder, maxBytesPerTrigger="45"), tmp_path / "cp").finish()
    assert run.batches() == [4, 4]
    big = Run(spark, stream(spark, folder, maxBytesPerTrigger="5"), tmp_path / "big").finish()
    assert big.batches() == [2, 2, 2, 2]  # a file bigger than the limit still makes a batch


def test_available_now_leaves_files_added_while_it_runs_for_the_next_run(spark, tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    for i in range(3):
        write(folder, f"{i}.jsonl", [i], age=100 - i)
    seen: list[int] = []
    added: list[str] = []

    def each(batch, batch_id):
        seen.extend(r.n for r in batch.collect())
        if batch_id == 0:
            write(folder, "late.jsonl", [7])
            with open(folder / "0.jsonl", "ab") as f:
                f.write(lines(8))
            added.append(batch_id)

    def run():
        query = stream(spark, folder, maxFilesPerTrigger="1").writeStream.foreachBatch(each) \
            .option("checkpointLocation", str(tmp_path / "cp")).trigger(availableNow=True) \
            .start()
        query.awaitTermination(180)
        assert not query.isActive
        return [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]

    assert run() == [1, 1, 1]
    assert added and sorted(seen) == [0, 1, 2]
    seen.clear()
    assert sorted(run()) == [1, 1]
    assert sorted(seen) == [7, 8]


def test_processing_time_trigger_reads_files_as_they_come(spark, tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    write(folder, "a.jsonl", [0, 1])
    run = Run(spark, stream(spark, folder), tmp_path / "cp",
              trigger={"processingTime": "200 milliseconds"})
    try:
        wait_for(lambda: run.numbers() == [0, 1], 120, "the first file's lines")
        write(folder, "b.jsonl", [2])
        with open(folder / "a.jsonl", "ab") as f:
            f.write(lines(3))
        wait_for(lambda: run.numbers() == [0, 1, 2, 3], 120, "a new file and a new line")
    finally:
        run.query.stop()


def test_startingPosition_latest_skips_what_is_there_when_the_query_first_starts(spark,
                                                                                 tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    write(folder, "a.jsonl", [0, 1])
    df = stream(spark, folder, startingPosition="latest")
    seen: list[int] = []
    query = df.writeStream.foreachBatch(lambda b, i: seen.extend(r.n for r in b.collect())) \
        .option("checkpointLocation", str(tmp_path / "cp")) \
        .trigger(processingTime="200 milliseconds").start()
    try:
        wait_for(lambda: query.lastProgress is not None, 120, "the query's first trigger")
        with open(folder / "a.jsonl", "ab") as f:
            f.write(lines(2))
        write(folder, "b.jsonl", [3])  # a file new since the start: from its first line
        wait_for(lambda: sorted(seen) == [2, 3], 120, "the lines added after the start")
    finally:
        query.stop()


@pytest.mark.parametrize(("options", "message"), [
    ({"maxFilesPerTrigger": "0"}, "maxFilesPerTrigger must be positive"),
    ({"maxFilesPerTrigger": "1", "maxBytesPerTrigger": "10"},
     "maxFilesPerTrigger and maxBytesPerTrigger cannot be set together"),
    ({"maxFilesPerTriger": "1"}, "did you mean maxFilesPerTrigger"),
    ({"latestFirst": "true"}, "unknown option 'latestfirst' for streamslice-files")])
def test_bad_options_fail_in_one_line(spark, tmp_path, options, message):
    folder = tmp_path / "in"
    folder.mkdir()
    write(folder, "a.jsonl", [0])
    with pytest.raises(Exception, match=message) as failed:
        Run(spark, stream(spark, folder, **options), tmp_path / "cp").finish()
    assert "Traceback" not in str(failed.value)
