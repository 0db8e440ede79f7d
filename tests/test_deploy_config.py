"""The deployment's configuration, checked without a cluster: the Postgres variant of
``dagster.yaml``, the executor chosen by ``MEMORY_EXECUTOR`` (and the Celery workers' copy of
its settings), and the Kubernetes variant (``memory_assets/deploy/helm-values.yaml`` for the
``dagster/dagster`` chart, and the image's ``Dockerfile``) against the code location and
dagster's own config schemas. ``tests/test_deployment.py`` runs the local deployment for real.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from dagster._config import process_config, validate_config
from dagster._core.instance.config import dagster_instance_config

from memory_assets.definitions import defs
from memory_assets.defs.runtime import CELERY_CONFIG, EXECUTORS, executor
from tests.conftest import REPO

DEPLOY = REPO / "memory_assets" / "deploy"
PG_ENV = {"DAGSTER_PG_HOST": "127.0.0.1", "DAGSTER_PG_PORT": "5432", "DAGSTER_PG_USER": "dagster",
          "DAGSTER_PG_PASSWORD": "secret", "DAGSTER_PG_DB": "dagster"}


def _yaml(path: Path) -> dict:
    return yaml.safe_load(path.read_text())


def _values() -> dict:
    return _yaml(DEPLOY / "helm-values.yaml")


def _code_location() -> dict:
    (entry,) = _yaml(REPO / "workspace.yaml")["load_from"]
    return entry["python_module"]


def _snake(key: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()


# --- the Postgres variant -------------------------------------------------------------------

def test_postgres_instance_is_the_local_instance_with_postgres_storage():
    local, deployed = _yaml(REPO / "dagster.yaml"), _yaml(DEPLOY / "dagster.yaml")
    storage = deployed.pop("storage")
    assert deployed == local
    fields = storage["postgres"]["postgres_db"]
    assert {fields[k]["env"] for k in ("hostname", "port", "username", "password", "db_name")} == set(PG_ENV)


def test_postgres_instance_config_validates_and_reads_the_connection_from_env(monkeypatch):
    from dagster_postgres import PostgresRunStorage

    for name, value in PG_ENV.items():
        monkeypatch.setenv(name, value)
    config, _ = dagster_instance_config(str(DEPLOY))
    resolved = process_config(PostgresRunStorage.config_type(), config["storage"]["postgres"])
    assert resolved.success, resolved.errors
    db = resolved.value["postgres_db"]
    assert (db["hostname"], db["port"], db["password"], db["scheme"]) == ("127.0.0.1", 5432, "secret",
                                                                           "postgresql+psycopg2")


# --- the executor ---------------------------------------------------------------------------

@pytest.mark.parametrize("choice, name", [(None, "multiprocess"), ("multiprocess", "multiprocess"),
                                          ("celery", "celery"), ("k8s", "k8s")])
def test_memory_executor_picks_where_steps_run(monkeypatch, choice, name):
    if choice:
        monkeypatch.setenv("MEMORY_EXECUTOR", choice)
    else:
        monkeypatch.delenv("MEMORY_EXECUTOR", raising=False)
    assert defs().resolve_job_def("ingest_session").executor_def.name == name


def test_an_unknown_executor_names_the_choices(monkeypatch):
    monkeypatch.setenv("MEMORY_EXECUTOR", "dask")
    with pytest.raises(ValueError, match="MEMORY_EXECUTOR='dask': expected one of multiprocess, celery, k8s"):
        executor()
    assert EXECUTORS == ("multiprocess", "celery", "k8s")


@pytest.mark.parametrize("choice, expected", [("celery", {"broker": "redis://127.0.0.1:6390/0"}),
                                              ("k8s", {"max_concurrent": 2})])
def test_each_executors_settings_validate_against_its_library(monkeypatch, choice, expected):
    monkeypatch.setenv("MEMORY_CELERY_BROKER", "redis://127.0.0.1:6390/0")
    monkeypatch.setenv("MEMORY_CELERY_BACKEND", "redis://127.0.0.1:6390/1")
    resolved = executor(choice).config_schema.resolve_config({})
    assert resolved.success, resolved.errors
    assert expected.items() <= resolved.value["config"].items()


def test_celery_workers_read_the_executors_broker(tmp_path, monkeypatch):
    """The file `make deploy-local` gives `dagster-celery worker start -y` validates with
    dagster-celery's own loader and names the broker the executor sends steps to."""
    from dagster_celery.cli import get_validated_config

    monkeypatch.setenv("MEMORY_CELERY_BROKER", "redis://127.0.0.1:6390/0")
    monkeypatch.setenv("MEMORY_CELERY_BACKEND", "redis://127.0.0.1:6390/1")
    path = tmp_path / "celery.yaml"
    path.write_text(yaml.safe_dump({"execution": {"config": CELERY_CONFIG}}))
    worker = get_validated_config(str(path))
    assert (worker["broker"], worker["backend"]) == ("redis://127.0.0.1:6390/0", "redis://127.0.0.1:6390/1")


@pytest.mark.slow  # `dg check defs` in a fresh process, once per executor (the fast loop runs it once)
@pytest.mark.parametrize("choice", ["celery", "k8s"])
def test_dg_check_defs_passes_with_each_distributed_executor(choice):
    dg_bin = Path(sys.executable).with_name("dg")
    env = {"MEMORY_EXECUTOR": choice, "MEMORY_CELERY_BROKER": "redis://127.0.0.1:6390/0",
           "MEMORY_CELERY_BACKEND": "redis://127.0.0.1:6390/1"}
    done = subprocess.run([str(dg_bin), "check", "defs"], cwd=REPO, capture_output=True, text=True, timeout=300,
                          env={**os.environ, **env})
    assert done.returncode == 0, done.stdout + done.stderr


# --- the Kubernetes variant -----------------------------------------------------------------

def _user_deployment() -> dict:
    (deployment,) = _values()["dagster-user-deployments"]["deployments"]
    return deployment


def _env(deployment: dict) -> dict[str, str]:
    return {e["name"]: e["value"] for e in deployment["env"]}


def test_helm_user_deployment_serves_the_code_location_of_workspace_yaml():
    deployment = _user_deployment()
    args = deployment["dagsterApiGrpcArgs"]
    assert args[args.index("-m") + 1] == _code_location()["module_name"]
    workdir = re.search(r"^WORKDIR (\S+)$", (DEPLOY / "Dockerfile").read_text(), re.MULTILINE).group(1)
    assert args[args.index("-d") + 1] == workdir
    env = _env(deployment)
    assert env["MEMORY_EXECUTOR"] == "k8s" and env["HF_HUB_OFFLINE"] == "1"
    assert deployment["includeConfigInLaunchedRuns"]["enabled"] is True


def test_every_pod_mounts_the_same_data_root():
    deployment, launcher = _user_deployment(), _values()["runLauncher"]["config"]["k8sRunLauncher"]
    data_root = _env(deployment)["MEMORY_DATA_ROOT"]
    for pod in (deployment, launcher):
        (mount,) = pod["volumeMounts"]
        (volume,) = [v for v in pod["volumes"] if v["name"] == mount["name"]]
        assert mount["mountPath"] == data_root
        assert volume["persistentVolumeClaim"]["claimName"] == "memory-data"


def test_the_image_is_built_as_make_install_builds_a_machine():
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    assert "RUN make install" in dockerfile
    workdir = re.search(r"^WORKDIR (\S+)$", dockerfile, re.MULTILINE).group(1)
    assert re.search(rf"^ENV PATH={workdir}/\.venv/bin:", dockerfile, re.MULTILINE)
    image = _user_deployment()["image"]
    assert f"-t {image['repository']}:{image['tag']}" in dockerfile


def _chart_instance(values: dict) -> dict:
    """The instance config the chart renders from these values (its templates
    configmap-instance.yaml and helpers/instance/*.tpl), for the keys set here."""
    pg, daemon, concurrency = values["postgresql"], values["dagsterDaemon"], values["concurrency"]
    queued = {k: v for k, v in daemon["runCoordinator"]["config"]["queuedRunCoordinator"].items() if v}
    postgres = {"postgres_db": {"username": pg["postgresqlUsername"], "password": {"env": "DAGSTER_PG_PASSWORD"},
                                "hostname": "memory-postgresql", "db_name": pg["postgresqlDatabase"], "port": 5432,
                                "params": {}, "scheme": pg["postgresqlScheme"]}}
    storage = {kind: {"module": module, "class": cls, "config": postgres} for kind, module, cls in [
        ("run_storage", "dagster_postgres.run_storage", "PostgresRunStorage"),
        ("event_log_storage", "dagster_postgres.event_log", "PostgresEventLogStorage"),
        ("schedule_storage", "dagster_postgres.schedule_storage", "PostgresScheduleStorage")]}
    return {
        **storage,
        "run_launcher": {"module": "dagster_k8s", "class": "K8sRunLauncher", "config": {}},
        "run_coordinator": {"module": "dagster._core.run_coordinator", "class": "QueuedRunCoordinator",
                            **({"config": {_snake(k): v for k, v in queued.items()}} if queued else {})},
        "run_monitoring": {"enabled": daemon["runMonitoring"]["enabled"],
                           "poll_interval_seconds": daemon["runMonitoring"]["pollIntervalSeconds"]},
        "concurrency": {"runs": {"max_concurrent_runs": concurrency["runs"]["maxConcurrentRuns"],
                                 "tag_concurrency_limits": concurrency["runs"].get("tagConcurrencyLimits", [])},
                        "pools": {_snake(k): v for k, v in concurrency["pools"].items()}},
        "retention": {kind: {"purge_after_days": values["retention"][kind]["purgeAfterDays"]}
                      for kind in ("schedule", "sensor")},
        "telemetry": values["telemetry"],
    }


def test_helm_instance_config_validates_and_repeats_the_local_settings(tmp_path):
    rendered = _chart_instance(_values())
    (tmp_path / "dagster.yaml").write_text(yaml.safe_dump(rendered))
    config, _ = dagster_instance_config(str(tmp_path))
    local, deployed = _yaml(REPO / "dagster.yaml"), _yaml(DEPLOY / "dagster.yaml")
    assert config["concurrency"] == local["concurrency"]
    assert config["telemetry"] == local["telemetry"]
    assert config["run_monitoring"]["poll_interval_seconds"] == local["run_monitoring"]["poll_interval_seconds"]
    assert config["retention"]["schedule"] == local["retention"]["schedule"]
    assert config["run_storage"]["config"]["postgres_db"]["scheme"] == \
        deployed["storage"]["postgres"]["postgres_db"]["scheme"]


def test_helm_run_launcher_config_validates_against_dagster_k8s():
    from dagster_k8s import K8sRunLauncher

    launcher = _values()["runLauncher"]
    assert launcher["type"] == "K8sRunLauncher"
    values = launcher["config"]["k8sRunLauncher"]
    config = {_snake(k): v for k, v in values.items() if k not in ("envConfigMaps", "envSecrets", "runK8sConfig")}
    config["run_k8s_config"] = {_snake(k): v for k, v in values["runK8sConfig"].items()}
    # The chart's template turns the {name: ...} lists into names and adds the rest itself.
    config["env_secrets"] = [s["name"] for s in values["envSecrets"]]
    config["env_config_maps"] = [{"env": "DAGSTER_K8S_PIPELINE_RUN_ENV_CONFIGMAP"},
                                 *(m["name"] for m in values["envConfigMaps"])]
    config.update({"job_namespace": "memory", "service_account_name": "memory-dagster",
                   "dagster_home": {"env": "DAGSTER_HOME"},
                   "instance_config_map": {"env": "DAGSTER_K8S_INSTANCE_CONFIG_MAP"},
                   "postgres_password_secret": {"env": "DAGSTER_K8S_PG_PASSWORD_SECRET"}})
    checked = validate_config(K8sRunLauncher.config_type(), config)
    assert checked.success, checked.errors


def test_runs_that_publish_items_are_tagged_and_limited_to_one_at_a_time(tmp_path):
    """Two runs that each build and publish memory_items at once would each stage a version,
    and one would publish the other's before its checks ran (seen on a fresh deployment:
    nightly and weekly launched together): every job and sensor that builds items tags its
    runs, and every instance config lets one such run proceed at a time."""
    import dagster as dg

    from memory_assets.defs.scheduled_jobs import ITEMS_WRITER_TAGS

    loaded = defs()
    (key, value), = ITEMS_WRITER_TAGS.items()
    builders = []
    for job in loaded.jobs or []:
        resolved = loaded.resolve_job_def(job.name)
        if any(k.path[-1] in ("memory_items", "published_items") for k in resolved.asset_layer.executable_asset_keys):
            builders.append(job.name)
            assert resolved.tags.get(key) == value, f"{job.name} builds items without the {key} tag"
    assert {"nightly", "weekly", "monthly", "materialize_items", "fold_feedback", "erase"} <= set(builders)
    automation = next(s for s in loaded.sensors or [] if isinstance(s, dg.AutomationConditionSensorDefinition))
    assert automation.run_tags.get(key) == value
    limit = {"key": key, "value": value, "limit": 1}
    for path in (REPO / "dagster.yaml", DEPLOY / "dagster.yaml"):
        assert limit in _yaml(path)["concurrency"]["runs"]["tag_concurrency_limits"], path
    rendered = _chart_instance(_values())
    assert limit in rendered["concurrency"]["runs"]["tag_concurrency_limits"]
    (tmp_path / "dagster.yaml").write_text(yaml.safe_dump(rendered))
    config, _ = dagster_instance_config(str(tmp_path))  # the instance schema takes it
    assert config["concurrency"]["runs"]["tag_concurrency_limits"] == [limit]


def test_the_sensors_run_as_often_as_the_config_says(tmp_path):
    """``[pipeline] sensor_seconds`` sets how often the daemon runs the inbox and automation
    sensors (read when the code location loads, so in a fresh process)."""
    config = tmp_path / "memory.toml"
    config.write_text("[pipeline]\nsensor_seconds = 7\n")
    code = ("from memory_assets.defs.ingest.sensors import inbox_sensor\n"
            "from memory_assets.defs.items.sensors import automation_sensor\n"
            "print(inbox_sensor.minimum_interval_seconds, automation_sensor.minimum_interval_seconds)")
    for env, expected in (({"MEMORY_CONFIG": str(config)}, "7 7"), ({}, "30 30")):
        base = {k: v for k, v in os.environ.items() if k != "MEMORY_CONFIG"}
        done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env={**base, **env},
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stdout.split()[-2:] == expected.split()
