"""What docs/development.md says `make test` checks before the suite: mypy covers the package
and all the Python beside it (devtools/, bench/, jobs/, dags/), every function annotated, with
no section that switches a module's errors off; ruff's blind-except and complexity rules are on,
and each noqa for them says why."""
import re
import tomllib

from tests.conftest import ROOT

CONFIG = tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_mypy_checks_every_python_folder_but_the_tests_strictly():
    mypy = CONFIG["tool"]["mypy"]
    folders = {"plugins/streamslice" if top.name == "plugins" else top.name
               for top in ROOT.iterdir() if top.is_dir() and not top.name.startswith(".")
               and top.name != "tests" and next(top.rglob("*.py"), None)}
    assert sorted(mypy["files"]) == sorted(folders) == sorted(
        ["plugins/streamslice", "devtools", "bench", "jobs", "dags"])
    assert mypy["disallow_untyped_defs"] is True and mypy["check_untyped_defs"] is True
    assert not any(o.get("ignore_errors") for o in mypy.get("overrides", []))


def test_blind_excepts_and_complex_functions_say_why():
    lint = CONFIG["tool"]["ruff"]["lint"]
    assert {"BLE", "C901"} <= set(lint["select"]) and lint["mccabe"]["max-complexity"] == 12
    for folder in ("plugins", "devtools", "bench", "jobs", "dags", "tests"):
        for path in (ROOT / folder).rglob("*.py"):
            for n, line in enumerate(path.read_text().splitlines(), 1):
                for rule in re.findall(r"noqa: ?((?:BLE001|C901)[^#]*)", line):
                    assert re.match(r"(BLE001|C901) - \w", rule), f"{path}:{n}: {line.strip()}"
