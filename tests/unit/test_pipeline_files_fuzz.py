"""Pipeline files that must not take anything down: bad encodings, alias bombs, huge or deeply
nested files, and bad values of every kind. Each becomes one error line naming the file, in
bounded time, and the valid pipelines next to it still load."""
import time

import pytest

from streamslice.config import load_pipelines

GOOD = "mode: incremental\nkafka: {bootstrap_servers: 'a:1', topics: [t]}\noutput: {path: /x}\n"
BOMB = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
    for p, c in zip("abcdefgh", "bcdefghi")) + GOOD

BAD_FILES = {
    "latin1": ("pipeline: caf\xe9\n".encode("latin-1") + GOOD.encode(), "is not UTF-8 text"),
    "bomb": (BOMB.encode(), "expands to more than 100000 values"),
    "huge": (GOOD.encode() + b"#" * (1024 * 1024), "is larger than 1024 KiB"),
    "deep": (b"x: " + b"[" * 100_000 + b"]" * 100_000 + b"\n", "invalid YAML"),
    "list": (b"- a\n- b\n", "must be a YAML mapping"),
    "binary": (b"\x00\x01\x02", "invalid YAML"),
    "null_source": (b"mode: incremental\nkafka:\noutput: {path: /x}\n", "kafka"),
    "bad_mode": (GOOD.replace("incremental", "sometimes").encode(), "'sometimes' is not one of"),
}


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_each_bad_file_is_one_error_and_the_good_one_still_loads(tmp_path, name):
    data, message = BAD_FILES[name]
    (tmp_path / "good.yaml").write_text(GOOD)
    (tmp_path / f"{name}.yaml").write_bytes(data)
    started = time.process_time()  # CPU seconds: a busy machine does not slow them
    configs, errors = load_pipelines(tmp_path)
    assert time.process_time() - started < 10
    assert [c.name for c in configs] == ["good"]
    assert len(errors) == 1 and message in str(errors[0])
    assert str(errors[0]).startswith(str(tmp_path / f"{name}.yaml"))
    assert "\n" not in str(errors[0])
