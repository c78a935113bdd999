"""What docs/development.md says `make test` checks before the suite: mypy covers the package
and all the Python beside it (devtools/, bench/, jobs/, dags/, tests/), every function
annotated but the tests' (whose bodies are checked all the same), with
no section that switches a module's errors off, and the package with every flag of mypy's
--strict; ruff's blind-except and complexity rules are on,
and each noqa for them says why."""
import re
import subprocess
import sys
import tomllib

from tests.conftest import ROOT

CONFIG = tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_mypy_checks_every_python_folder():
    mypy = CONFIG["tool"]["mypy"]
    folders = {"plugins/streamslice" if top.name == "plugins" else top.name
               for top in ROOT.iterdir() if top.is_dir() and not top.name.startswith(".")
               and next(top.rglob("*.py"), None)}
    assert sorted(mypy["files"]) == sorted(folders) == sorted(
        ["plugins/streamslice", "devtools", "bench", "jobs", "dags", "tests"])
    assert mypy["disallow_untyped_defs"] is True and mypy["check_untyped_defs"] is True
    assert not any(o.get("ignore_errors") for o in mypy.get("overrides", []))
    tests = [o for o in mypy.get("overrides", []) if o["module"] == "tests.*"]
    assert tests == [{"module": "tests.*", "disallow_untyped_defs": False}]


def strict_flags() -> list[str]:
    """The flags mypy's own --help says --strict enables, as config keys."""
    text = subprocess.run([sys.executable, "-m", "mypy", "--help"], capture_output=True,
                          text=True, check=True).stdout
    listed = re.sub(r"-\n\s+", "-", text.split("enables the following flags:", 1)[1])
    listed = listed.split("\n  --", 1)[0]
    return [flag.replace("-", "_") for flag in re.findall(r"--([a-z-]+)", listed)]


def test_the_package_is_checked_with_every_flag_of_strict():
    mypy = CONFIG["tool"]["mypy"]
    overrides = mypy.get("overrides", [])
    packages = [o for o in overrides if "streamslice.*" in o["module"]]
    assert len(packages) == 1, "one override sets the package's flags"
    settings = {**mypy, **packages[0]}
    flags = strict_flags()
    assert "disallow_any_generics" in flags and "warn_return_any" in flags
    for flag in flags:
        on = settings.get(flag) is True or (flag.startswith("no_")
                                            and settings.get(flag[3:]) is False)
        assert on, f"{flag} is not set for the package"
    for o in overrides:
        if o["module"] == "tests.*":  # the tests' functions need no annotations
            continue
        assert not any(o.get(flag) is False for flag in flags), o["module"]


def test_blind_excepts_and_complex_functions_say_why():
    lint = CONFIG["tool"]["ruff"]["lint"]
    assert {"BLE", "C901"} <= set(lint["select"]) and lint["mccabe"]["max-complexity"] == 12
    for folder in ("plugins", "devtools", "bench", "jobs", "dags", "tests"):
        for path in (ROOT / folder).rglob("*.py"):
            for n, line in enumerate(path.read_text().splitlines(), 1):
                for rule in re.findall(r"noqa: ?((?:BLE001|C901)[^#]*)", line):
                    assert re.match(r"(BLE001|C901) - \w", rule), f"{path}:{n}: {line.strip()}"
