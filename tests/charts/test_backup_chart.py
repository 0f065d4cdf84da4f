"""The flextenant chart's backup: a CronJob (off by default) that runs ``manage.py backup`` to a bucket with
a retention, as an account that reads; rendered offline and validated against Kubernetes' schemas."""

from __future__ import annotations

from typing import Any

import helm_python
import pytest

from tests.charts import kit
from tests.charts.kit import Manifest, kinds, manifests
from tests.charts.test_flextenant_chart import CHART, NAMESPACE, RELEASE, REQUIRED, render
from tests.kubeschema import invalid

NAME = f"{RELEASE}-flextenant-backup"
BACKUP: dict[str, Any] = {
    "backup": {
        "enabled": True,
        "schedule": "5 2 * * *",
        "timeZone": "Europe/Berlin",
        "keep": 7,
        "s3": {
            "url": "s3://platform-backups/flexplane",
            "endpoint": "https://minio.example.com:9000",
            "credentialsSecret": "backup-bucket",
        },
    }
}

chart = kit.loaded(CHART)


@pytest.fixture(scope="module")
def rendered(chart: helm_python.Chart) -> list[Manifest]:
    return manifests(render(chart, BACKUP))


def named(rendered: list[Manifest], kind: str) -> Manifest:
    (found,) = [m for m in rendered if m["kind"] == kind and m["metadata"]["name"] == NAME]
    return found


def pod(rendered: list[Manifest]) -> dict[str, Any]:
    spec: dict[str, Any] = named(rendered, "CronJob")["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    return spec


def test_no_backup_is_rendered_by_default(chart: helm_python.Chart) -> None:
    rendered = manifests(render(chart, {}))
    assert "CronJob" not in kinds(rendered)
    assert not [m for m in rendered if m["metadata"]["name"] == NAME]


def test_the_backup_validates_against_the_kubernetes_schema(rendered: list[Manifest]) -> None:
    assert {"CronJob", "ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"} <= {
        m["kind"] for m in rendered if m["metadata"]["name"] == NAME
    }
    assert invalid(rendered) == []


def test_the_chart_with_the_backup_lints_clean() -> None:
    kit.assert_lints_clean(CHART, kit.merged(REQUIRED, BACKUP), NAMESPACE)


def test_it_backs_up_to_the_bucket_on_the_schedule_keeping_the_newest(rendered: list[Manifest]) -> None:
    cronjob = named(rendered, "CronJob")["spec"]
    container = kit.sole_container(pod(rendered))

    assert (cronjob["schedule"], cronjob["timeZone"], cronjob["concurrencyPolicy"]) == (
        "5 2 * * *",
        "Europe/Berlin",
        "Forbid",
    )
    assert container["command"] == ["python", "-m", "django", "backup"]
    assert container["args"] == ["--s3=s3://platform-backups/flexplane", "--keep=7"]
    env = kit.env_of(container)
    assert env["FLEXPLANE_BACKUP_S3_ENDPOINT"] == "https://minio.example.com:9000"
    assert env["FLEXPLANE_BACKUP_S3_ACCESS_KEY"] == {
        "secretKeyRef": {"name": "backup-bucket", "key": "access-key"}
    }
    assert env["FLEXPLANE_BACKUP_S3_SECRET_KEY"] == {
        "secretKeyRef": {"name": "backup-bucket", "key": "secret-key"}
    }
    assert env["FLEXPLANE_NAMESPACE"] == NAMESPACE  # the orchestrator's settings


def test_the_key_is_a_read_only_file_where_the_command_looks(rendered: list[Manifest]) -> None:
    spec = pod(rendered)
    container = kit.sole_container(spec)

    secret, files = kit.read_only_secret(spec, container, "backup-key")

    assert secret == "flexplane-backup-key"
    assert files == {kit.env_of(container)["FLEXPLANE_BACKUP_KEY_FILE"]}


def test_the_backup_account_reads_and_only_creates_the_platform_id(rendered: list[Manifest]) -> None:
    rules = named(rendered, "Role")["rules"] + named(rendered, "ClusterRole")["rules"]
    verbs = {(resource, verb) for rule in rules for resource in rule["resources"] for verb in rule["verbs"]}

    assert {verb for _, verb in verbs} <= {"get", "list", "create"}
    assert {resource for resource, verb in verbs if verb == "create"} == {"configmaps"}
    assert named(rendered, "Role")["metadata"]["namespace"] == NAMESPACE
    assert pod(rendered)["serviceAccountName"] == NAME
    # Beyond the platform namespace, Secrets are read by name only (a cluster's PKI and key), never listed.
    cluster_wide = named(rendered, "ClusterRole")["rules"]
    assert [rule["verbs"] for rule in cluster_wide if "secrets" in rule["resources"]] == [["get"]]


def test_an_enabled_backup_needs_a_bucket(chart: helm_python.Chart) -> None:
    with pytest.raises(
        helm_python.HelmRenderError, match=r"backup\.s3\.url \(s3://bucket/prefix\) is required"
    ):
        render(chart, {"backup": {"enabled": True}})


def test_the_schema_refuses_a_bucket_address_that_is_not_s3(chart: helm_python.Chart) -> None:
    with pytest.raises(helm_python.HelmValuesError, match="url"):
        render(chart, kit.merged(BACKUP, {"backup": {"s3": {"url": "https://bucket.example.com/x"}}}))
