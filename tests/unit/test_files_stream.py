"""The files stream's offsets and limits (``files.stream``) over a real folder, without Spark:
what Spark's driver would get from ``latestOffset`` and ``partitions``."""
import os

import pytest

from streamslice.errors import ConfigError, DataLossError
from streamslice.files.source import FileSource
from streamslice.files.stream import FileLimits, Pending, stream_from_options, take


def stream(folder, **options):
    opts = {"path": str(folder), **{k.lower(): v for k, v in options.items()}}
    return stream_from_options(opts, FileSource.from_options(opts)[0])


def write(folder, name, text, age=0):
    path = folder / name
    path.write_text(text)
    os.utime(path, (1_700_000_000 - age, 1_700_000_000 - age))


def test_take_reads_whole_files_oldest_first_up_to_the_limit():
    pending = {"a": Pending(5, 50, 3), "b": Pending(2, 20, 1), "c": Pending(4, 40, 2)}
    latest = {"a": 5, "b": 2, "c": 4}
    assert take(FileLimits(max_files=2), {}, latest, pending) == {"b": 2, "c": 4}
    assert take(FileLimits(max_files=2), {"b": 2}, latest, pending) == {"a": 5, "b": 2, "c": 4}
    assert take(FileLimits(max_bytes=45), {}, latest, pending) == {"b": 2}
    assert take(FileLimits(max_bytes=1), {}, latest, pending) == {"b": 2}  # at least one


def test_offsets_are_complete_lines_and_available_now_fixes_the_end(tmp_path):
    write(tmp_path, "a.txt", "1\n2\n3")  # the third line has no newline yet
    s = stream(tmp_path)
    assert s.initial_offset() == {}
    s.prepare_available_now()
    assert s.latest_offset({}, False) == {"a.txt": 2}
    write(tmp_path, "a.txt", "1\n2\n3\n4\n")
    write(tmp_path, "b.txt", "5\n")
    assert s.latest_offset({"a.txt": 2}, False) == {"a.txt": 2}  # nothing newer than the start
    later = stream(tmp_path)
    assert later.latest_offset({"a.txt": 2}, False) == {"a.txt": 4, "b.txt": 1}


def test_starting_position_latest_starts_at_the_end_of_the_files_there(tmp_path):
    write(tmp_path, "a.txt", "1\n2\n")
    assert stream(tmp_path, startingPosition="latest").initial_offset() == {"a.txt": 2}


def test_a_batchs_splits_span_its_lines_bytes_even_when_the_file_grew(tmp_path):
    write(tmp_path, "a.txt", "one\ntwo\nthree\nfour\n")
    splits = stream(tmp_path).batch_splits({"a.txt": 1}, {"a.txt": 3})
    assert [(s.path, s.start, s.stop, s.start_byte, s.stop_byte) for s in splits] == \
        [("a.txt", 1, 3, 4, 14)]


def test_a_file_cut_below_its_offset_is_data_loss(tmp_path):
    write(tmp_path, "a.txt", "1\n")
    with pytest.raises(DataLossError, match="the checkpoint is at line 3"):
        stream(tmp_path).latest_offset({"a.txt": 3}, False)


def test_limits_are_positive_and_one_of_the_two():
    assert stream_limits(maxFilesPerTrigger="3") == FileLimits(max_files=3)
    with pytest.raises(ConfigError, match="maxBytesPerTrigger must be positive"):
        stream_limits(maxBytesPerTrigger="0")
    with pytest.raises(ConfigError, match="cannot be set together"):
        stream_limits(maxFilesPerTrigger="1", maxBytesPerTrigger="1")


def stream_limits(**options):
    from streamslice.files.stream import limits_from_options
    return limits_from_options({k.lower(): v for k, v in options.items()})
