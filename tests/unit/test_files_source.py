"""The files source on real local files, without Spark or Airflow: its ``files:`` block, how it
plans complete lines, how its reader holds the plan's byte ranges to their lines, resets."""
import pytest

from streamslice.commit.checkpoint import Checkpoint
from streamslice.config import parse_pipeline
from streamslice.errors import ConfigError, DataLossError
from streamslice.files.source import FileSource
from streamslice.planning.planner import plan_run
from streamslice.reading.decode import Decoder
from streamslice.sources import ReadRequest, position_text, read_plan, source_class


def config(folder, extra="", mode="incremental"):
    return parse_pipeline(f"mode: {mode}\nfiles: {{path: '{folder}'{extra}}}\n"
                          "output: {path: /tmp/out}\n")


def plan(folder, checkpoint=None, **kw):
    cfg = config(folder, **kw)
    return read_plan(plan_run(cfg.source, pipeline="p", mode="incremental",
                              checkpoint=checkpoint).to_json())


def read(p, decoder=None):
    readers, out = source_class("files").readers(), {}
    for split in p.splits:
        reader = readers.open_reader(split, ReadRequest(plan=p, properties={},
                                                        decoder=decoder or Decoder("string")))
        out[split.key] = [(r["line"], r["value"]) for b in reader.batches()
                          for r in b.to_pylist()]
    return out


@pytest.mark.parametrize("block, message", [
    ("path: relative/dir", "files.path: 'relative/dir' must be an absolute path or a URI"),
    ("path: /d, start: newest", "files.start: 'newest' is not one of: earliest, latest"),
    ("path: /d, topics: [x]", "unknown key 'topics'"),
    ("pattern: '*'", "files.path"),
])
def test_the_files_block_names_what_is_wrong(block, message):
    with pytest.raises(ConfigError, match=message):
        parse_pipeline(f"mode: incremental\nfiles: {{{block}}}\n")


def test_interval_mode_is_refused_with_the_reason():
    with pytest.raises(ConfigError, match="lines in a file carry no time to cut intervals by"):
        parse_pipeline("mode: interval\nschedule: '@hourly'\nfiles: {path: /d}\n")


def test_complete_lines_only_crlf_and_empty_lines_are_records(tmp_path):
    (tmp_path / "a.log").write_bytes(b"one\r\n\nthree\nfour (no newline yet)")
    p = plan(tmp_path)
    (split,) = p.splits
    assert (split.key, split.start, split.stop, split.start_byte, split.stop_byte) == \
        ("a.log", 0, 3, 0, 12)
    assert p.next_positions == {"a.log": 3}
    assert read(p) == {"a.log": [(0, "one"), (1, ""), (2, "three")]}


def test_a_run_starts_at_the_checkpoint_line_and_latest_skips_what_is_there(tmp_path):
    (tmp_path / "a.log").write_bytes(b"l0\nl1\nl2\n")
    (tmp_path / "b.log").write_bytes(b"old\n")
    p = plan(tmp_path, Checkpoint(positions={"a.log": 2}, batch=1))
    assert read(p) == {"a.log": [(2, "l2")], "b.log": [(0, "old")]}
    assert plan(tmp_path, Checkpoint(positions={"a.log": 3, "b.log": 1})).splits == []
    latest = plan(tmp_path, extra=", start: latest")
    assert latest.splits == [] and latest.next_positions == {"a.log": 3, "b.log": 1}


def test_a_file_shorter_than_its_checkpoint_is_data_loss(tmp_path):
    (tmp_path / "a.log").write_bytes(b"l0\n")
    with pytest.raises(DataLossError, match="the checkpoint is at line 5 but the file has 1 "
                                            "complete lines: it was truncated or replaced"):
        plan(tmp_path, Checkpoint(positions={"a.log": 5}))


@pytest.mark.parametrize("rewrite", [b"l0\nl1\n", b"l0\nl1l2\n", b"l0\nl1\nl2\nl3\nl4\n" * 3])
def test_a_file_rewritten_after_planning_fails_the_read(tmp_path, rewrite):
    (tmp_path / "a.log").write_bytes(b"l0\nl1\nl2\n")
    p = plan(tmp_path)
    (tmp_path / "a.log").write_bytes(rewrite)
    if rewrite.startswith(b"l0\nl1\nl2\n"):  # appended to: the planned lines are still there
        assert read(p) == {"a.log": [(0, "l0"), (1, "l1"), (2, "l2")]}
        return
    with pytest.raises(DataLossError, match="a.log: lines 0 to 3 are no longer where the "
                                            "plan found them"):
        read(p)


def test_lines_that_do_not_decode_are_dead_letters_with_their_line(tmp_path):
    (tmp_path / "a.jsonl").write_bytes(b'{"n": 1}\n[]\n{"n": 3}\n')
    p = plan(tmp_path)
    reader = source_class("files").readers().open_reader(
        p.splits[0], ReadRequest(plan=p, properties={},
                                 decoder=Decoder("json", schema=[("n", "long")])))
    rows = [r for b in reader.batches() for r in b.to_pylist()]
    assert [(r["line"], r["n"]) for r in rows] == [(0, 1), (2, 3)]
    modified = (tmp_path / "a.jsonl").stat().st_mtime_ns // 1_000_000
    assert {int(r["timestamp"].timestamp() * 1000) for r in rows} == {modified}
    (dead,) = reader._dead
    assert dead.to_pylist()[0]["line"] == 1 and "JSON object" in dead.to_pylist()[0]["error"]
    assert reader.stats.summary.dead_letters == 1


def test_resets_take_earliest_latest_or_line_numbers(tmp_path):
    (tmp_path / "a.log").write_bytes(b"l0\nl1\n")
    source = config(tmp_path).source.planner()
    assert source.reset_positions("earliest", {}).positions == {"a.log": 0}
    assert source.reset_positions("latest", {}).positions == {"a.log": 2}
    assert source.reset_positions({"offsets": {"a.log": 1}}, {}).positions == {"a.log": 1}
    with pytest.raises(ConfigError, match="'b.log' is not a file this pipeline reads"):
        source.reset_positions({"offsets": {"b.log": 1}}, {})
    with pytest.raises(ConfigError, match="'x' is not a line number"):
        source.reset_positions({"offsets": {"a.log": "x"}}, {})
    with pytest.raises(ConfigError, match="lines carry no timestamp"):
        source.reset_positions({"timestamp": 1}, {})


def test_a_folder_that_is_not_there_is_named(tmp_path):
    from streamslice.errors import PlanError
    with pytest.raises(PlanError, match="is not a folder"):
        plan(tmp_path / "missing")


def test_line_numbers_render_as_they_are():
    assert (position_text("files", 1234567890123).short, position_text("files", 7).full) == \
        ("1234567890123", "7")


def test_spark_options_and_the_files_blocks_defaults(tmp_path):
    """``spark.read.format("streamslice-files").load(folder)`` with ``pattern`` and
    ``startingPosition``; the files: block's defaults (pattern *, start earliest)."""
    (tmp_path / "a.log").write_bytes(b"l0\nl1\n")
    src = config(tmp_path).source
    assert (src.pattern, src.start) == ("*", "earliest")
    files = source_class("files")
    src, props = files.from_options({"path": f"{tmp_path}/", "pattern": "*.log",
                                     "startingposition": "LATEST"})
    assert isinstance(src, FileSource)
    assert (src.path, src.pattern, src.start, props) == (str(tmp_path), "*.log", "latest", {})
    planned = read_plan(plan_run(src, pipeline="p", mode="incremental").to_json())
    assert planned.splits == [] and planned.next_positions == {"a.log": 2}  # latest: its end
    default = files.from_options({"path": str(tmp_path)})[0]
    assert isinstance(default, FileSource) and default.start == "earliest"
    with pytest.raises(ConfigError, match="option startingPosition: 'newest' is not earliest "
                                          "or latest"):
        files.from_options({"path": str(tmp_path), "startingposition": "newest"})
    with pytest.raises(ConfigError, match=r"option path is required \(a folder"):
        files.from_options({"pattern": "*"})
