"""queue, pool, pool_slots, priority_weight and executor_config: parsed per pipeline and per
task with file:line:field errors, and handed to each task of the real Airflow DAG under
Airflow's own names."""
import pytest

from streamslice.airflow.factory import build_dag
from streamslice.config.task_args import TaskArgs
from tests.unit.test_config import error, parse

KAFKA = """\
mode: interval
schedule: "@hourly"
start_date: 2024-05-01T00:00:00Z
kafka: {bootstrap_servers: "b:9092", topics: [t]}
output: {path: /lake}
"""
EFO = """\
mode: incremental
kinesis: {stream: s, reader: efo}
output: {path: /lake}
"""
POD = {"metadata": {"labels": {"team": "data"}},
       "spec": {"containers": [{"name": "base", "resources": {"requests": {"memory": "4Gi"}}}]}}


def test_nothing_set_leaves_every_task_to_airflows_defaults():
    cfg = parse(KAFKA)
    assert [cfg.routing.kwargs(t) for t in ("plan", "read", "commit")] == [{}, {}, {}]
    dag = build_dag(cfg)
    from airflow.configuration import conf
    assert [(t.queue, t.pool, t.pool_slots, t.priority_weight, t.executor_config)
            for t in dag.tasks] == \
        [(conf.get("operators", "default_queue"), "default_pool", 1, 1, {})] * 3


def test_pipeline_keys_reach_every_task_and_a_tasks_own_keys_win():
    """Every task of a Kinesis EFO pipeline (setup and teardown too): the pipeline's keys,
    with read's and efo_deregister's own in their place (executor_config replaced whole)."""
    cfg = parse(EFO + """\
queue: streams
pool: streamslice
priority_weight: 3
executor_config:
  pod_override:
    metadata: {labels: {team: data}}
    spec:
      containers: [{name: base, resources: {requests: {memory: 4Gi}}}]
per_task:
  read: {queue: spark, pool: spark_reads, pool_slots: 2,
         executor_config: {pod_template_file: /opt/pods/spark.yaml}}
  efo_deregister: {priority_weight: 10}
""")
    from airflow.serialization.serialized_objects import DagSerialization
    dag = build_dag(cfg)
    pipeline_wide = ("streams", "streamslice", 1, 3, {"pod_override": POD})
    # as the DAG is built, and as the scheduler and the executors get it (serialised)
    for tasks in (dag.task_dict,
                  DagSerialization.from_dict(DagSerialization.to_dict(dag)).task_dict):
        assert set(tasks) == {"efo_sweep", "efo_register", "plan", "read", "commit",
                              "efo_deregister"}
        got = {t.task_id: (t.queue, t.pool, t.pool_slots, t.priority_weight,
                           t.executor_config) for t in tasks.values()}
        assert got == {
            "efo_sweep": pipeline_wide, "efo_register": pipeline_wide,
            "plan": pipeline_wide, "commit": pipeline_wide,
            "read": ("spark", "spark_reads", 2, 3,
                     {"pod_template_file": "/opt/pods/spark.yaml"}),
            "efo_deregister": ("streams", "streamslice", 1, 10, {"pod_override": POD})}
    assert type(cfg.routing.pipeline.executor_config["pod_override"]) is dict  # not the loader's


def test_the_combined_task_takes_its_own_keys():
    cfg = parse(KAFKA + "tasks: combined\npool: lake\nper_task:\n"
                "  plan_read_commit: {queue: spark, priority_weight: -5}\n")
    task = build_dag(cfg).task_dict["plan_read_commit"]
    assert (task.queue, task.pool, task.priority_weight) == ("spark", "lake", -5)


def test_task_args_hold_only_what_is_set():
    assert TaskArgs(queue="q", pool_slots=2).kwargs() == {"queue": "q", "pool_slots": 2}


@pytest.mark.parametrize("text, message", [
    (KAFKA + "queue: ''\n", "p.yaml:6: queue: must be a non-empty string, got str ''"),
    (KAFKA + "pool: [a]\n", "p.yaml:6: pool: must be a non-empty string, got a list"),
    (KAFKA + "pool_slots: 0\n", "p.yaml:6: pool_slots: must be at least 1, got 0"),
    (KAFKA + "priority_weight: high\n",
     "p.yaml:6: priority_weight: must be a whole number, got str 'high'"),
    (KAFKA + "priority_weight: 3000000000\n",
     "p.yaml:6: priority_weight: must be at most 2147483647, got 3000000000"),
    (KAFKA + "executor_config: big\n",
     "p.yaml:6: executor_config: must be a non-empty mapping (for the KubernetesExecutor: "
     "{pod_override: {spec: ...}} or {pod_template_file: path})"),
    (KAFKA + "executor_config:\n  pod_override: big-pod\n",
     "p.yaml:7: executor_config.pod_override: must be a pod as a mapping, as in a pod's YAML "
     "(metadata, spec)"),
    (KAFKA + "per_task:\n  reed: {queue: spark}\n",
     "p.yaml:7: per_task.reed: 'reed' is not a task of this pipeline; its tasks are plan, "
     "read, commit"),
    (KAFKA + "tasks: combined\nper_task:\n  read: {queue: spark}\n",
     "p.yaml:8: per_task.read: 'read' is not a task of this pipeline (tasks: combined plans, "
     "reads and commits in one task, plan_read_commit); its tasks are plan_read_commit"),
    (KAFKA + "per_task:\n  plan_read_commit: {queue: spark}\n",
     "p.yaml:7: per_task.plan_read_commit: 'plan_read_commit' is not a task of this pipeline "
     "(tasks: separate plans, reads and commits in three tasks); its tasks are plan, read, "
     "commit"),
    (KAFKA + "per_task:\n  efo_register: {queue: q}\n",
     "its tasks are plan, read, commit"),
    (KAFKA + "per_task:\n  read: {queue: spark, retries: 3}\n",
     "p.yaml:7: per_task.read.retries: unknown key 'retries' (allowed here: executor_config, "
     "pool, pool_slots, priority_weight, queue)"),
    (KAFKA + "per_task:\n  read: spark\n",
     "p.yaml:7: per_task.read: must be a mapping, got str 'spark'"),
    (KAFKA + "per_task: [read]\n", "p.yaml:6: per_task: must be a mapping, got a list"),
])
def test_each_bad_key_is_named_with_its_line(text, message):
    assert message in error(text)


def test_a_pod_override_becomes_the_pod_object_of_the_kubernetes_provider(monkeypatch):
    """Where the cncf.kubernetes provider is installed the DAG hands the KubernetesExecutor
    the V1Pod it takes, made by the provider's own PodGenerator.deserialize_model_dict. That
    provider is not installed here: a stand-in module records the call (it covers only our
    part: what is converted, and that the other keys stay)."""
    import sys
    import types
    calls = []

    class PodGenerator:
        @staticmethod
        def deserialize_model_dict(pod):
            calls.append(pod)
            return ("V1Pod", pod["metadata"]["labels"]["team"])

    module = types.ModuleType("airflow.providers.cncf.kubernetes.pod_generator")
    vars(module)["PodGenerator"] = PodGenerator
    for name in ("airflow.providers.cncf", "airflow.providers.cncf.kubernetes"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    monkeypatch.setitem(sys.modules, module.__name__, module)
    from streamslice.airflow.factory import task_args
    cfg = parse(KAFKA + "executor_config:\n  pod_template_file: /t.yaml\n  pod_override:\n"
                "    metadata: {labels: {team: data}}\nper_task:\n"
                "  commit: {executor_config: {pod_template_file: /c.yaml}}\n")
    assert task_args(cfg, "read")["executor_config"] == {"pod_template_file": "/t.yaml",
                                                         "pod_override": ("V1Pod", "data")}
    assert calls == [{"metadata": {"labels": {"team": "data"}}}]
    assert task_args(cfg, "commit")["executor_config"] == {"pod_template_file": "/c.yaml"}
    assert cfg.routing.kwargs("read")["executor_config"]["pod_override"] == calls[0]  # as parsed
