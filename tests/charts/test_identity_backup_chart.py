"""The identity chart's backup of Zitadel's database: a CronJob (off by default) whose pg_dump, from the
chart's PostgreSQL image as Zitadel's own user, hands a custom-format dump to flex.plane's image, which
seals it and puts it in the bucket of the platform's backup (``manage.py backup_dump``). Rendered
offline, validated against Kubernetes' schemas; what the dump and its restore do against a real
PostgreSQL is tests/orchestrator/test_identity_backup.py's."""

from __future__ import annotations

from typing import Any

import helm_python
import pytest
import yaml

from tests.charts import kit, test_backup_chart, test_flextenant_chart
from tests.charts.kit import Manifest, manifests
from tests.charts.test_identity_chart import (
    CHART,
    FULLNAME,
    MINIMAL,
    NAMESPACE,
    SECRET_NAMES,
    admitted,
    env_of,
    job,
    named,
    pod_labels,
    render,
)
from tests.kubeschema import invalid

NAME = f"{FULLNAME}-backup"
BACKUP: dict[str, Any] = {
    "backup": {
        "enabled": True,
        "schedule": "37 2 * * *",
        "timeZone": "Europe/Berlin",
        "keep": 30,
        "s3": {
            "url": "s3://platform-backups/flexplane",
            "endpoint": "https://minio.example.com:9000",
            "credentialsSecret": "backup-bucket",
        },
    }
}
EXTERNAL = yaml.safe_load((CHART / "ci" / "external-database-values.yaml").read_text())
EXAMPLE = yaml.safe_load((CHART / "ci" / "example-values.yaml").read_text())
VALUES = {
    "in-chart": kit.merged(MINIMAL, BACKUP),
    "in-chart-tls": EXAMPLE,  # the production example backs its database up
    "external": kit.merged(EXTERNAL, BACKUP),
}

chart = kit.loaded(CHART)
renders = kit.rendered_once(VALUES, lambda loaded, values: render(loaded, values))
rendered = kit.rendering(VALUES)


def pod(rendered: list[Manifest]) -> dict[str, Any]:
    spec: dict[str, Any] = named(rendered, "CronJob", NAME)["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    return spec


def dump_and_seal(rendered: list[Manifest]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The pod's two steps: pg_dump (an init container), then the sealing and upload."""
    spec = pod(rendered)
    (dump,) = spec["initContainers"]
    return dump, kit.sole_container(spec)


def test_no_backup_is_rendered_by_default(chart: helm_python.Chart) -> None:
    rendered = manifests(render(chart, MINIMAL))
    assert "CronJob" not in kit.kinds(rendered)
    assert not [m for m in rendered if m["metadata"]["name"] == NAME]


def test_the_backup_validates_against_the_kubernetes_schema(rendered: list[Manifest]) -> None:
    assert named(rendered, "CronJob", NAME)
    assert invalid(rendered) == []


@pytest.mark.parametrize("values", sorted(VALUES))
def test_the_chart_with_the_backup_lints_clean(values: str) -> None:
    kit.assert_lints_clean(CHART, VALUES[values], NAMESPACE)


def test_it_runs_on_the_schedule_one_at_a_time(renders: dict[str, list[Manifest]]) -> None:
    cronjob = named(renders["in-chart"], "CronJob", NAME)["spec"]
    assert (cronjob["schedule"], cronjob["timeZone"], cronjob["concurrencyPolicy"]) == (
        "37 2 * * *",
        "Europe/Berlin",
        "Forbid",
    )
    assert pod(renders["in-chart"])["restartPolicy"] == "Never"


def test_the_in_chart_database_is_dumped_in_custom_format_as_zitadels_own_user(
    renders: dict[str, list[Manifest]],
) -> None:
    rendered = renders["in-chart"]
    dump, _seal = dump_and_seal(rendered)
    database = named(rendered, "StatefulSet", f"{FULLNAME}-postgresql")["spec"]["template"]["spec"]
    assert dump["image"] == database["containers"][0]["image"]  # pg_dump of the server's own major
    assert dump["command"][0] == "pg_dump"
    assert "--format=custom" in dump["command"]
    env = env_of(dump)
    assert (env["PGHOST"], env["PGPORT"], env["PGDATABASE"], env["PGUSER"]) == (
        f"{FULLNAME}-postgresql.{NAMESPACE}.svc",
        "5432",
        "zitadel",
        "zitadel",
    )
    # The password Zitadel itself connects with; the superuser's stays with the init job alone.
    assert env["PGPASSWORD"] == {"secretKeyRef": {"name": "identity-secrets", "key": "zitadel-password"}}
    assert (env["PGSSLMODE"], "PGSSLROOTCERT" in env) == ("disable", False)  # plain, inside the fence


def test_a_database_with_tls_is_verified_as_zitadel_verifies_it(renders: dict[str, list[Manifest]]) -> None:
    for values, host, secret in (
        ("in-chart-tls", f"{FULLNAME}-postgresql.{NAMESPACE}.svc", "zitadel-postgresql-tls"),
        ("external", "pg.lab.example", "zitadel-db-ca"),
    ):
        spec = pod(renders[values])
        dump, _seal = dump_and_seal(renders[values])
        env = env_of(dump)
        config = yaml.safe_load(
            named(renders[values], "ConfigMap", f"{FULLNAME}-config")["data"]["config.yaml"]
        )
        postgres = config["Database"]["postgres"]
        assert (env["PGHOST"], env["PGPORT"]) == (host, str(postgres["Port"])), values
        assert env["PGSSLMODE"] == postgres["User"]["SSL"]["Mode"] == "verify-full"
        mount, volume = kit.mounted(spec, dump, "database-ca")
        assert env["PGSSLROOTCERT"] == f"{mount['mountPath']}/ca.crt"
        assert volume["secret"]["secretName"] == secret


def test_the_dump_is_sealed_where_pg_dump_wrote_it_and_put_in_the_bucket(
    renders: dict[str, list[Manifest]],
) -> None:
    spec = pod(renders["in-chart"])
    dump, seal = dump_and_seal(renders["in-chart"])
    written = next(arg.removeprefix("--file=") for arg in dump["command"] if arg.startswith("--file="))
    shared = {m["mountPath"] for m in dump["volumeMounts"] if m["name"] == "dump"}
    assert {m["mountPath"] for m in seal["volumeMounts"] if m["name"] == "dump"} == shared
    assert written.rsplit("/", 1)[0] in shared
    (volume,) = [v for v in spec["volumes"] if v["name"] == "dump"]
    assert volume["emptyDir"] == {"sizeLimit": "4Gi"}
    assert seal["command"] == ["python", "-m", "django", "backup_dump", written]
    assert seal["args"] == ["--s3=s3://platform-backups/flexplane", "--name=identity", "--keep=30"]
    # Flex.plane's image, as the bootstrap job runs it, with the settings every deployment shares.
    (bootstrap,) = job(renders["in-chart"], "bootstrap")["spec"]["template"]["spec"]["containers"]
    assert seal["image"] == bootstrap["image"]
    assert env_of(seal)["DJANGO_SETTINGS_MODULE"] == "flexplane.settings.base"


def test_the_bucket_and_key_reach_it_as_they_reach_the_platforms_backup(
    renders: dict[str, list[Manifest]],
) -> None:
    """The same values, under the same names in both charts, make the same settings: one bucket, one key."""
    with helm_python.Chart.load(test_flextenant_chart.CHART) as tenant:
        platform = test_backup_chart.pod(
            manifests(test_flextenant_chart.render(tenant, kit.merged(BACKUP, {"backup": {"keep": 30}})))
        )
    theirs = kit.sole_container(platform)
    spec = pod(renders["in-chart"])
    _dump, ours = dump_and_seal(renders["in-chart"])

    def backup_env(container: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in env_of(container).items() if k.startswith("FLEXPLANE_BACKUP_")}

    assert backup_env(ours) == backup_env(theirs)
    assert backup_env(ours)["FLEXPLANE_BACKUP_S3_SECRET_KEY"] == {
        "secretKeyRef": {"name": "backup-bucket", "key": "secret-key"}
    }
    assert [a for a in ours["args"] if a.startswith("--s3")] == [
        a for a in theirs["args"] if a.startswith("--s3")
    ]
    secret, files = kit.read_only_secret(spec, ours, "backup-key")
    assert (secret, files) == kit.read_only_secret(platform, theirs, "backup-key")
    assert files == {env_of(ours)["FLEXPLANE_BACKUP_KEY_FILE"]}


def test_the_database_admits_the_backup_and_nothing_else_new(renders: dict[str, list[Manifest]]) -> None:
    rendered = renders["in-chart"]
    database = pod_labels(rendered, "StatefulSet", f"{FULLNAME}-postgresql")
    labels = named(rendered, "CronJob", NAME)["spec"]["jobTemplate"]["spec"]["template"]["metadata"]["labels"]
    assert admitted(rendered, database, labels, NAMESPACE, "postgresql")
    assert not admitted(rendered, database, labels, "default", "postgresql")


def test_the_backup_needs_no_kubernetes_api(rendered: list[Manifest]) -> None:
    spec = pod(rendered)
    assert spec["automountServiceAccountToken"] is False
    assert "serviceAccountName" not in spec
    for container in [*spec["initContainers"], *spec["containers"]]:
        assert "api-token" not in {m["name"] for m in container["volumeMounts"]}
    # The chart's only Role is still the setup jobs' (test_identity_chart asserts what it grants).
    assert [m["metadata"]["name"] for m in rendered if m["kind"] in {"Role", "RoleBinding"}] == [
        f"{FULLNAME}-setup",
        f"{FULLNAME}-setup",
    ]


def test_every_container_of_the_backup_is_locked_down(rendered: list[Manifest]) -> None:
    spec = pod(rendered)
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    for container in [*spec["initContainers"], *spec["containers"]]:
        context = container["securityContext"]
        assert context["readOnlyRootFilesystem"] is True, container["name"]
        assert context["runAsNonRoot"] is True
        assert context["allowPrivilegeEscalation"] is False
        assert context["capabilities"] == {"drop": ["ALL"]}


def test_no_password_or_key_is_a_plain_value_of_the_backup(rendered: list[Manifest]) -> None:
    spec = pod(rendered)
    for container in [*spec["initContainers"], *spec["containers"]]:
        plain = [
            name
            for name, value in env_of(container).items()
            if SECRET_NAMES.search(name) and not isinstance(value, dict)
        ]
        assert plain == [], container["name"]


def test_an_enabled_backup_needs_a_bucket(chart: helm_python.Chart) -> None:
    with pytest.raises(
        helm_python.HelmRenderError, match=r"backup\.s3\.url \(s3://bucket/prefix\) is required"
    ):
        render(chart, kit.merged(MINIMAL, {"backup": {"enabled": True}}))


@pytest.mark.parametrize("url", ["https://bucket.example.com/x", "s3://bucket/a prefix"])
def test_the_schema_refuses_a_bucket_address_that_is_not_s3(chart: helm_python.Chart, url: str) -> None:
    with pytest.raises(helm_python.HelmValuesError, match="url"):
        render(chart, kit.merged(VALUES["in-chart"], {"backup": {"s3": {"url": url}}}))
