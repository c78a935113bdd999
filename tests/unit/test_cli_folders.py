"""Where ``streamslice`` looks for pipeline files and where a relative ``output.path`` lands:
the folder ``streamslice init`` wrote (Airflow's DAGs folder, whatever it is called) is the one
the other commands find and the one outputs hang off, and ``--dir`` works on either side of
the command."""
import json
from pathlib import Path

import pytest

from streamslice.cli import main, parser
from streamslice.config import load_pipeline

ENV = ("STREAMSLICE_PIPELINES", "STREAMSLICE_HOME", "AIRFLOW__CORE__DAGS_FOLDER",
       "AIRFLOW_HOME")


@pytest.fixture
def elsewhere(tmp_path, monkeypatch):
    """A working folder with no ``dags/`` in it and none of the variables set."""
    for name in ENV:
        monkeypatch.delenv(name, raising=False)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return tmp_path


def test_init_then_validate_with_a_dags_folder_of_another_name(elsewhere, monkeypatch, capsys):
    dags = elsewhere / "airflow" / "my-dags"
    monkeypatch.setenv("AIRFLOW__CORE__DAGS_FOLDER", str(dags))
    monkeypatch.setenv("AIRFLOW_HOME", str(elsewhere / "airflow"))
    assert main(["init", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["pipelines"] == str(dags / "pipelines")
    assert main(["validate", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["valid"] == ["example_events"]
    # the example's relative output.path hangs off the folder above the DAGs folder
    cfg = load_pipeline(dags / "pipelines" / "example_events.yaml")
    assert cfg.output.path == str(elsewhere / "airflow" / "output")


def test_dir_goes_before_or_after_the_command(elsewhere, capsys):
    folder = elsewhere / "mine"
    assert main(["init", str(folder)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == \
        f"next: streamslice validate --dir {folder / 'pipelines'}"
    for argv in (["validate", "--dir", str(folder / "pipelines")],
                 ["--dir", str(folder / "pipelines"), "validate"]):
        assert main([*argv, "--json"]) == 0, argv
        assert json.loads(capsys.readouterr().out)["valid"] == ["example_events"]
    # a --dir before the command is not undone by the command's own (absent) one
    args = parser().parse_args(["--dir", "X", "--debug", "offsets", "show", "p"])
    assert (args.dir, args.debug) == ("X", True)
    assert parser().parse_args(["efo", "list", "s", "--dir", "Y"]).dir == "Y"


def test_a_folder_that_is_not_there_is_named(elsewhere, capsys):
    assert main(["validate", "--dir", str(elsewhere / "nope")]) == 1
    assert capsys.readouterr().err.strip() == \
        f"streamslice: pipelines folder {elsewhere / 'nope'} does not exist (from --dir)"
    assert main(["validate"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("streamslice: no pipelines folder found (looked in dags/pipelines "
                          "and ") and "run `streamslice init`, or pass --dir" in err


def test_relative_output_paths_and_streamslice_home(elsewhere, monkeypatch):
    text = "mode: incremental\nkafka: {bootstrap_servers: 'a:1', topics: [t]}\n" \
        "output: {path: out}\n"
    for file, root in ((Path("/p/dags/pipelines/o.yaml"), "/p"),
                       (Path("/p/anything/pipelines/o.yaml"), "/p"),
                       (Path("/p/loose/o.yaml"), "/p/loose")):
        file = elsewhere / file.relative_to("/")
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(text)
        assert load_pipeline(file).output.path == str(elsewhere / root.lstrip("/") / "out")
        monkeypatch.setenv("STREAMSLICE_HOME", "/srv/project")
        assert load_pipeline(file).output.path == "/srv/project/out"
        monkeypatch.delenv("STREAMSLICE_HOME")
