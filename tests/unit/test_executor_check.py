"""Airflow's executor as ``streamslice validate`` reads it, without Airflow: one executor or
a list, by name, module path or ``alias:path``, from the environment or airflow.cfg."""
import pytest

from streamslice.config.executor import configured_executor, distributed_executors


@pytest.mark.parametrize("executor, remote", [
    (None, []), ("", []), ("LocalExecutor", []), ("SequentialExecutor", []),
    ("CeleryExecutor", ["CeleryExecutor"]),
    ("airflow.providers.cncf.kubernetes.executors.kubernetes_executor.KubernetesExecutor",
     ["KubernetesExecutor"]),
    ("LocalExecutor, gpu:airflow.providers.celery.executors.celery_executor.CeleryExecutor",
     ["CeleryExecutor"]),
    ("LocalExecutor,my.company.MyExecutor", []),
])
def test_which_executors_run_tasks_on_other_hosts(executor, remote):
    assert distributed_executors(executor) == remote


def test_the_environment_wins_over_airflow_cfg_which_is_found_as_airflow_finds_it(tmp_path):
    (tmp_path / "airflow.cfg").write_text("[core]\ndags_folder = {AIRFLOW_HOME}/dags\n"
                                          "executor = CeleryExecutor\n")
    home = {"AIRFLOW_HOME": str(tmp_path)}
    assert configured_executor(home) == "CeleryExecutor"
    assert configured_executor({**home, "AIRFLOW__CORE__EXECUTOR": "LocalExecutor"}) == \
        "LocalExecutor"
    other = tmp_path / "other.cfg"
    other.write_text("[core]\nexecutor = KubernetesExecutor\n")
    assert configured_executor({**home, "AIRFLOW_CONFIG": str(other)}) == "KubernetesExecutor"
    assert configured_executor({"AIRFLOW_HOME": str(tmp_path / "nowhere")}) is None
    (tmp_path / "airflow.cfg").write_text("not a config file [\n")
    assert configured_executor(home) is None
