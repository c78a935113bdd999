"""The package's own promises that need no install: the extras named in pyproject.toml are
the ones the code checks, a missing extra is named in the validation error (the missing
module is faked here: the real case is tests/integration/test_wheel.py), ``streamslice
init`` writes a DAGs folder whose example validates and keeps what exists, the provider
metadata is what Airflow's schema asks for, and executors get the package's sources."""
import importlib.util
import json
import tomllib
import zipfile
from pathlib import Path

import pytest

from streamslice import __version__
from streamslice.cli import main
from streamslice.config import extras, load_pipeline, parse_pipeline
from streamslice.errors import ConfigError
from tests.support.checks import present

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def test_every_extra_the_code_checks_is_declared_and_brings_its_modules():
    declared = PROJECT["optional-dependencies"]
    assert set(extras.EXTRAS) <= set(declared)
    assert set(declared) - set(extras.EXTRAS) == {"airflow", "all"}
    everything = declared["all"][0]
    assert all(e in everything for e in extras.EXTRAS)
    for extra in extras.EXTRAS:  # this test's venv has every extra installed
        assert extras.missing_modules(extra) == [], extra


def test_the_entry_points_name_what_airflow_loads():
    from streamslice.airflow.provider import get_provider_info
    from streamslice.airflow.ui import StreamslicePlugin
    points = PROJECT["entry-points"]
    assert points["airflow.plugins"] == {"streamslice": "streamslice.airflow.ui:StreamslicePlugin"}
    assert points["apache_airflow_provider"] == {
        "provider_info": "streamslice.airflow.provider:get_provider_info"}
    assert StreamslicePlugin.name == "streamslice"
    info = get_provider_info()
    schema = json.loads((Path(present(__import__("airflow").__file__)).parent
                         / "provider_info.schema.json").read_text())
    import jsonschema
    jsonschema.validate(info, schema)
    assert info["package-name"] == PROJECT["name"]
    assert "plugins" not in info  # registered once, by the entry point


@pytest.mark.parametrize("fmt,extra", [("avro", "avro"), ("protobuf", "protobuf")])
def test_a_format_whose_extra_is_missing_fails_naming_the_extra(monkeypatch, fmt, extra):
    gone = extras.EXTRAS[extra]
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name: None if name in gone else real(name))
    text = ("mode: incremental\nkafka:\n  bootstrap_servers: b:9092\n  topics: [t]\n"
            f"format:\n  value: {fmt}\n")
    with pytest.raises(ConfigError) as err:
        parse_pipeline(text, file="p.yaml")
    assert err.value.field == "format.value" and err.value.line == 6
    assert f"pip install 'streamslice-{__version__}-py3-none-any.whl[{extra}]'" in str(err.value)


@pytest.mark.parametrize("block,extra,field", [
    ("kafka:\n  bootstrap_servers: b:9092\n  topics: [t]\n", "kafka", "kafka"),
    ("kinesis:\n  streams: [s]\n  region: eu-west-1\n", "kinesis", "kinesis"),
    ("kafka:\n  bootstrap_servers: b:9092\n  topics: [t]\noutput:\n  format: delta\n",
     "delta", "output.format"),
    ("kafka:\n  bootstrap_servers: b:9092\n  topics: [t]\n", "spark", "spark.runner"),
])
def test_a_pipeline_whose_extra_is_missing_fails_naming_the_extra(monkeypatch, block, extra,
                                                                 field):
    gone = extras.EXTRAS[extra]
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name: None if name in gone else real(name))
    with pytest.raises(ConfigError) as err:
        parse_pipeline("mode: incremental\n" + block, file="p.yaml")
    assert err.value.field == field
    assert f"needs the streamslice[{extra}] extra" in str(err.value)


def test_init_writes_a_dags_folder_whose_example_validates_and_keeps_what_exists(
        tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("AIRFLOW_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("AIRFLOW__CORE__DAGS_FOLDER")
    assert main(["init", "--json"]) == 0
    dags = tmp_path / "home" / "dags"
    out = json.loads(capsys.readouterr().out)
    assert out["written"] == [str(dags / "streamslice_pipelines.py"),
                              str(dags / "pipelines" / "example_events.yaml")]
    assert (dags / "streamslice_pipelines.py").read_text() == \
        (ROOT / "dags" / "streamslice_pipelines.py").read_text()
    cfg = load_pipeline(dags / "pipelines" / "example_events.yaml")
    assert (cfg.name, cfg.mode, cfg.output.path) == (
        "example_events", "interval", str(tmp_path / "home" / "output"))
    assert main(["--dir", str(dags / "pipelines"), "validate"]) == 0
    (dags / "streamslice_pipelines.py").write_text("# mine\n")
    capsys.readouterr()
    assert main(["init", str(dags), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["kept"] == [str(dags / "streamslice_pipelines.py"),
                           str(dags / "pipelines" / "example_events.yaml")]
    assert (dags / "streamslice_pipelines.py").read_text() == "# mine\n"


def test_the_package_zip_and_launcher_come_from_where_the_package_is_imported(tmp_path):
    from streamslice.spark import package
    assert main(["package", str(tmp_path), "--json"]) == 0
    with zipfile.ZipFile(tmp_path / "streamslice.zip") as z:
        names = z.namelist()
    assert "streamslice/spark/bounded_read.py" in names and "streamslice/cli/__init__.py" in names
    assert sorted(names) == sorted(str(p.relative_to(package.PACKAGE_ROOT))
                                   for p in package.package_files())
    launcher = (tmp_path / "bounded_read.py").read_text()
    assert "from streamslice.spark.bounded_read import main" in launcher
    # A checkout's plugins/ is not site-packages: the session puts it on the workers' path.
    assert package.installed() is False
