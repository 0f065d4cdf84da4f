"""The identity chart (Zitadel, its own PostgreSQL) lints, renders valid manifests and keeps its promises.

Rendered offline (helm-python-sdk) once per set of values for the whole module, every manifest checked
against Kubernetes' own schemas (kubernetes-validate), as the flextenant chart is. The chart generates
no secret: the masterkey and the passwords are the operator's, made once.
"""

from __future__ import annotations

import base64
import copy
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import helm_python
import pytest
import yaml

from tests.charts import kit
from tests.charts.kit import Manifest, kinds, manifests
from tests.kubeschema import invalid

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "identity"
TENANT = ROOT / "charts" / "flextenant"
RELEASE, NAMESPACE = "idp", "identity"
FULLNAME = f"{RELEASE}-identity"


# The Secrets made once (the chart generates none: values.yaml's command makes this one).
MADE_ONCE = "identity-secrets"
MINIMAL = {
    "external": {"domain": "id.example.com"},
    "portal": {"url": "https://cloud.example.com"},
    "masterkey": {"existingSecret": MADE_ONCE},
    "firstInstance": {"admin": {"existingSecret": MADE_ONCE, "key": "admin-password"}},
    "database": {"user": {"existingSecret": MADE_ONCE}, "admin": {"existingSecret": MADE_ONCE}},
}
# A masterkey given as a value, to show it reaches a Secret's data only.
MASTERKEY = "Sentinel-masterkey-32-bytes-long"
VALUES = {
    "minimal": MINIMAL,
    "given-masterkey": MINIMAL | {"masterkey": {"value": MASTERKEY}},
    "example": yaml.safe_load((CHART / "ci" / "example-values.yaml").read_text()),
    "external-database": yaml.safe_load((CHART / "ci" / "external-database-values.yaml").read_text()),
    "k3s": yaml.safe_load((CHART / "ci" / "k3s-values.yaml").read_text()),  # docs/install.md's k3s
}
HOOKS = ("helm.sh/hook", "helm.sh/hook-weight")
SECRET_NAMES = re.compile(r"PASSWORD|MASTERKEY|SECRET|TOKEN|_KEY\b|KEY$")


chart = kit.loaded(CHART)


@pytest.fixture(scope="module")
def texts(chart: helm_python.Chart) -> dict[str, dict[str, str]]:
    """Every set of values, rendered once for the whole module: template path -> text."""
    return {name: render(chart, values) for name, values in VALUES.items()}


@pytest.fixture(scope="module")
def renders(texts: dict[str, dict[str, str]]) -> dict[str, list[Manifest]]:
    return {name: manifests(rendered) for name, rendered in texts.items()}


rendered = kit.rendering(VALUES)


def render(chart: helm_python.Chart, values: dict[str, Any]) -> dict[str, str]:
    return chart.render(values, name=RELEASE, namespace=NAMESPACE, is_install=True)


def named(rendered: list[Manifest], kind: str, name: str) -> Manifest:
    found = [m for m in rendered if m["kind"] == kind and m["metadata"]["name"] == name]
    assert len(found) == 1, f"expected one {kind} {name}, found {len(found)}"
    return found[0]


def pod_specs(rendered: list[Manifest]) -> dict[str, dict[str, Any]]:
    """Every pod template, by its workload's kind/name."""
    return {
        f"{m['kind']}/{m['metadata']['name']}": m["spec"]["template"]["spec"]
        for m in rendered
        if m["kind"] in {"Deployment", "StatefulSet", "Job"}
    }


def pod_labels(rendered: list[Manifest], kind: str, name: str) -> dict[str, str]:
    labels: dict[str, str] = named(rendered, kind, name)["spec"]["template"]["metadata"]["labels"]
    return labels


def containers(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return [*spec.get("initContainers", []), *spec["containers"]]


def env_of(container: dict[str, Any]) -> dict[str, Any]:
    return {var["name"]: var.get("value", var.get("valueFrom")) for var in container.get("env", [])}


def job(rendered: list[Manifest], step: str) -> Manifest:
    return named(rendered, "Job", f"{FULLNAME}-{step}")


def bootstrap_settings(rendered: list[Manifest], step: str = "bootstrap") -> dict[str, Any]:
    (container,) = job(rendered, step)["spec"]["template"]["spec"]["containers"]
    settings: dict[str, Any] = json.loads(env_of(container)["IDENTITY_BOOTSTRAP"])
    return settings


def selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    """A LabelSelector of matchLabels (the only form the chart writes) against a pod's labels."""
    assert set(selector) <= {"matchLabels"}, selector
    return all(labels.get(key) == value for key, value in selector.get("matchLabels", {}).items())


def admitted(
    rendered: list[Manifest], target: dict[str, str], source: dict[str, str], source_namespace: str, port: str
) -> bool:
    """Whether the NetworkPolicies let a pod (source) reach a pod of the release namespace (target) on
    a named port. Kubernetes' rule: a pod selected by an Ingress policy admits only what one of those
    policies' rules admits; a peer without namespaceSelector means the policy's own namespace."""
    policies = [
        m["spec"]
        for m in rendered
        if m["kind"] == "NetworkPolicy"
        and "Ingress" in m["spec"]["policyTypes"]
        and selects(m["spec"]["podSelector"], target)
    ]
    if not policies:
        return True
    for policy in policies:
        for rule in policy.get("ingress", []):
            if "ports" in rule and port not in {p["port"] for p in rule["ports"]}:
                continue
            peers = rule.get("from")
            if peers is None:
                return True
            for peer in peers:
                assert "ipBlock" not in peer, peer
                if "namespaceSelector" in peer or source_namespace != NAMESPACE:
                    continue  # the chart names no other namespace for the database (asserted below)
                if selects(peer["podSelector"], source):
                    return True
    return False


# --- lint and validation ----------------------------------------------------------------------


@pytest.mark.parametrize("values", sorted(VALUES))
def test_the_chart_lints_without_errors_or_warnings(values: str) -> None:
    kit.assert_lints_clean(CHART, VALUES[values], NAMESPACE)


def test_every_manifest_validates_against_the_kubernetes_schema(rendered: list[Manifest]) -> None:
    assert invalid(rendered) == []


def test_the_schema_describes_exactly_the_values_of_values_yaml(chart: helm_python.Chart) -> None:
    kit.assert_schema_is_exactly_the_values(chart)


def test_the_schema_refuses_an_unknown_key(chart: helm_python.Chart) -> None:
    with pytest.raises(helm_python.HelmValuesError, match="additional properties 'replicas' not allowed"):
        render(chart, MINIMAL | {"replicas": 3})


def test_a_missing_domain_is_refused_by_name(chart: helm_python.Chart) -> None:
    with pytest.raises(helm_python.HelmRenderError, match=r"external\.domain"):
        render(chart, {"portal": {"url": "https://cloud.example.com"}})


# --- no secret in plain text ------------------------------------------------------------------


def test_no_password_or_key_is_a_plain_value_of_any_manifest(
    texts: dict[str, dict[str, str]], renders: dict[str, list[Manifest]]
) -> None:
    for name, rendered in renders.items():
        secrets = [
            base64.b64decode(value).decode()
            for m in rendered
            if m["kind"] == "Secret"
            for value in m.get("data", {}).values()
        ]
        others = "\n".join(
            yaml.safe_dump(m) for m in rendered if m["kind"] != "Secret"
        )  # ConfigMaps (Zitadel's configuration, the steps, the script), workloads, everything else
        assert [s for s in secrets if s in others] == [], name
        for workload, spec in pod_specs(rendered).items():
            for container in containers(spec):
                plain = [
                    var
                    for var, value in env_of(container).items()
                    if SECRET_NAMES.search(var) and not isinstance(value, dict)
                ]
                assert plain == [], f"{name}: {workload}/{container['name']}"
    # The given masterkey appears in no rendered text, base64 in its Secret's data only.
    given = texts["given-masterkey"]
    assert [path for path, text in given.items() if MASTERKEY in text] == []
    secret = named(renders["given-masterkey"], "Secret", f"{FULLNAME}-masterkey")
    assert base64.b64decode(secret["data"]["masterkey"]).decode() == MASTERKEY


def test_zitadels_configuration_holds_no_password(rendered: list[Manifest]) -> None:
    def keys(node: Any) -> Iterator[str]:
        if isinstance(node, dict):
            for key, value in node.items():
                yield str(key)
                yield from keys(value)
        elif isinstance(node, list):
            for item in node:
                yield from keys(item)

    for m in rendered:
        if m["kind"] == "ConfigMap":
            for file, text in m["data"].items():
                if file.endswith(".yaml"):
                    assert [
                        k for k in keys(yaml.safe_load(text)) if re.search("(password|masterkey)$", k, re.I)
                    ] == []


def test_the_schema_refuses_a_password_in_extra_env(chart: helm_python.Chart) -> None:
    leak = {"name": "ZITADEL_DEFAULTINSTANCE_SMTPCONFIGURATION_SMTP_PASSWORD", "value": "hunter2"}
    with pytest.raises(helm_python.HelmValuesError, match="extraEnv"):
        render(chart, MINIMAL | {"zitadel": {"extraEnv": [leak]}})


# --- the masterkey ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "masterkey",
    ["x" * 31, "x" * 33, "é" * 32, " " * 32, "\t" + "x" * 31],
    ids=["31 bytes", "33 bytes", "32 characters of 64 bytes", "32 spaces", "a tab"],
)
def test_the_schema_refuses_a_masterkey_of_other_than_32_bytes(
    chart: helm_python.Chart, masterkey: str
) -> None:
    with pytest.raises(helm_python.HelmValuesError, match="masterkey"):
        render(chart, MINIMAL | {"masterkey": {"value": masterkey}})


def test_a_given_masterkey_outlives_the_release(renders: dict[str, list[Manifest]]) -> None:
    secret = named(renders["given-masterkey"], "Secret", f"{FULLNAME}-masterkey")
    assert secret["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"


@pytest.mark.parametrize("values", sorted(VALUES))
def test_the_chart_generates_no_secret(renders: dict[str, list[Manifest]], values: str) -> None:
    # What a render would generate, the next render (a GitOps tool's, without a cluster) would make anew:
    # a new masterkey bricks Zitadel's database, new passwords lock Zitadel out of it. Only a masterkey
    # given as a value makes a Secret, of that value.
    made = [m["metadata"]["name"] for m in renders[values] if m["kind"] == "Secret"]
    assert made == ([f"{FULLNAME}-masterkey"] if values == "given-masterkey" else [])


@pytest.mark.parametrize(
    "value",
    [
        ("masterkey", "existingSecret"),
        ("firstInstance", "admin", "existingSecret"),
        ("database", "user", "existingSecret"),
        ("database", "admin", "existingSecret"),
    ],
    ids=".".join,
)
def test_an_install_without_a_secret_made_once_is_refused_with_the_command_that_makes_it(
    chart: helm_python.Chart, value: tuple[str, ...]
) -> None:
    values: dict[str, Any] = copy.deepcopy(MINIMAL)
    parent = values
    for key in value[:-1]:
        parent = parent[key]
    parent[value[-1]] = ""
    says = (
        re.escape(".".join(value)) + r": .*create secret generic identity-secrets --from-literal=masterkey="
    )
    with pytest.raises(helm_python.HelmRenderError, match=says):
        render(chart, values)


def test_zitadel_and_its_setup_read_the_masterkey_from_its_secret_and_init_does_not(
    renders: dict[str, list[Manifest]],
) -> None:
    rendered = renders["example"]
    reference = {"secretKeyRef": {"name": "zitadel-masterkey", "key": "masterkey"}}
    assert not [m for m in rendered if m["kind"] == "Secret" and m["metadata"]["name"].endswith("masterkey")]
    zitadel = pod_specs(rendered)[f"Deployment/{FULLNAME}"]["containers"][0]
    (setup,) = job(rendered, "setup")["spec"]["template"]["spec"]["initContainers"]
    (init,) = job(rendered, "init")["spec"]["template"]["spec"]["containers"]
    assert env_of(zitadel)["ZITADEL_MASTERKEY"] == reference
    assert env_of(setup)["ZITADEL_MASTERKEY"] == reference
    assert "ZITADEL_MASTERKEY" not in env_of(init)
    assert "--masterkeyFromEnv" in zitadel["args"]
    assert "--masterkeyFromEnv" in setup["args"]


# --- the database -----------------------------------------------------------------------------


def test_postgresql_runs_as_a_statefulset_on_a_persistent_volume_claim(
    renders: dict[str, list[Manifest]],
) -> None:
    rendered = renders["example"]
    database = named(rendered, "StatefulSet", f"{FULLNAME}-postgresql")["spec"]
    (claim,) = database["volumeClaimTemplates"]
    (container,) = database["template"]["spec"]["containers"]
    assert claim["spec"]["resources"]["requests"]["storage"] == "20Gi"
    assert claim["spec"]["storageClassName"] == "ceph-rbd"
    assert {m["name"]: m["mountPath"] for m in container["volumeMounts"]}[
        "data"
    ] == "/var/lib/postgresql/data"
    assert database["persistentVolumeClaimRetentionPolicy"] == {
        "whenDeleted": "Retain",
        "whenScaled": "Retain",
    }
    # The superuser's password is the one zitadel init connects with: the Secret made once.
    assert env_of(container)["POSTGRES_PASSWORD"]["secretKeyRef"] == {
        "name": "zitadel-db",
        "key": "postgres-password",
    }


@pytest.mark.parametrize("values", ["minimal", "given-masterkey", "example", "k3s"])  # the in-chart database
def test_the_database_is_reachable_from_zitadel_and_its_init_and_setup_only(
    renders: dict[str, list[Manifest]], values: str
) -> None:
    rendered = renders[values]
    database = pod_labels(rendered, "StatefulSet", f"{FULLNAME}-postgresql")
    zitadel = pod_labels(rendered, "Deployment", FULLNAME)
    init, setup = (
        job(rendered, step)["spec"]["template"]["metadata"]["labels"] for step in ("init", "setup")
    )
    bootstrap = job(rendered, "bootstrap")["spec"]["template"]["metadata"]["labels"]
    for client in (zitadel, init, setup):
        assert admitted(rendered, database, client, NAMESPACE, "postgresql")
    # Any other pod: the bootstrap job, another app of the namespace, a pod wearing Zitadel's
    # labels in another namespace, a pod that copies every label but the database-client one.
    assert not admitted(rendered, database, bootstrap, NAMESPACE, "postgresql")
    assert not admitted(rendered, database, {"app": "curious"}, NAMESPACE, "postgresql")
    assert not admitted(rendered, database, zitadel, "default", "postgresql")
    impostor = {k: v for k, v in zitadel.items() if not k.startswith("identity.flexplane.io/")}
    assert not admitted(rendered, database, impostor, NAMESPACE, "postgresql")
    assert not admitted(rendered, database, zitadel, NAMESPACE, "metrics")


def test_the_database_opens_no_connection(renders: dict[str, list[Manifest]]) -> None:
    policy = named(renders["minimal"], "NetworkPolicy", f"{FULLNAME}-postgresql")["spec"]
    assert "Egress" in policy["policyTypes"]
    assert policy["egress"] == []


def test_the_in_chart_database_serves_tls_that_zitadel_verifies(renders: dict[str, list[Manifest]]) -> None:
    rendered = renders["example"]
    database = named(rendered, "StatefulSet", f"{FULLNAME}-postgresql")["spec"]["template"]["spec"]
    (container,) = database["containers"]
    tls = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}["tls"]
    assert container["args"] == [
        "-c", "ssl=on", "-c", f"ssl_cert_file={tls}/tls.crt", "-c", f"ssl_key_file={tls}/tls.key",
    ]  # fmt: skip
    (volume,) = [v for v in database["volumes"] if v["name"] == "tls"]
    assert volume["secret"]["secretName"] == "zitadel-postgresql-tls"
    assert volume["secret"]["defaultMode"] == 0o440  # root's, read by the postgres group: PostgreSQL takes it
    config = yaml.safe_load(named(rendered, "ConfigMap", f"{FULLNAME}-config")["data"]["config.yaml"])
    ssl = {"Mode": "verify-full", "RootCert": "/etc/zitadel/database-ca/ca.crt"}
    assert (
        config["Database"]["postgres"]["User"]["SSL"] == config["Database"]["postgres"]["Admin"]["SSL"] == ssl
    )
    for workload in (f"Deployment/{FULLNAME}", f"Job/{FULLNAME}-init"):
        (ca,) = [v for v in pod_specs(rendered)[workload]["volumes"] if v["name"] == "database-ca"]
        assert ca["secret"]["secretName"] == "zitadel-postgresql-tls"


def test_without_a_certificate_the_database_speaks_plain_inside_its_fence(
    renders: dict[str, list[Manifest]],
) -> None:
    config = yaml.safe_load(
        named(renders["minimal"], "ConfigMap", f"{FULLNAME}-config")["data"]["config.yaml"]
    )
    assert config["Database"]["postgres"]["User"]["SSL"] == {"Mode": "disable"}
    assert (
        "args"
        not in named(renders["minimal"], "StatefulSet", f"{FULLNAME}-postgresql")["spec"]["template"]["spec"][
            "containers"
        ][0]
    )


def test_an_external_database_replaces_the_statefulset_and_is_verified(
    renders: dict[str, list[Manifest]],
) -> None:
    rendered = renders["external-database"]
    assert not [m for m in rendered if "postgresql" in m["metadata"]["name"]]
    config = yaml.safe_load(named(rendered, "ConfigMap", f"{FULLNAME}-config")["data"]["config.yaml"])
    postgres = config["Database"]["postgres"]
    assert (postgres["Host"], postgres["Port"], postgres["User"]["Username"]) == (
        "pg.lab.example",
        5432,
        "zitadel",
    )
    assert postgres["User"]["SSL"] == {"Mode": "verify-full", "RootCert": "/etc/zitadel/database-ca/ca.crt"}
    zitadel = pod_specs(rendered)[f"Deployment/{FULLNAME}"]
    assert {"name": "database-ca", "mountPath": "/etc/zitadel/database-ca", "readOnly": True} in zitadel[
        "containers"
    ][0]["volumeMounts"]
    assert env_of(zitadel["containers"][0])["ZITADEL_DATABASE_POSTGRES_USER_PASSWORD"] == {
        "secretKeyRef": {"name": "zitadel-db", "key": "password"}
    }


def test_an_external_database_without_its_passwords_is_refused(chart: helm_python.Chart) -> None:
    external = {"database": {"external": {"enabled": True, "host": "pg.example.com", "sslMode": "require"}}}
    with pytest.raises(helm_python.HelmRenderError, match=r"database\.user\.existingSecret"):
        render(chart, MINIMAL | external)


def test_only_init_holds_the_database_admins_password(rendered: list[Manifest]) -> None:
    holders = [
        f"{workload}/{container['name']}"
        for workload, spec in pod_specs(rendered).items()
        for container in containers(spec)
        if "ZITADEL_DATABASE_POSTGRES_ADMIN_PASSWORD" in env_of(container)
    ]
    assert holders == [f"Job/{FULLNAME}-init/zitadel-init"]


# --- init, setup, the service user and the project --------------------------------------------


def test_init_then_setup_run_after_install_and_before_upgrade_and_the_bootstrap_after_both(
    renders: dict[str, list[Manifest]],
) -> None:
    rendered = renders["minimal"]
    hooks = {step: job(rendered, step)["metadata"]["annotations"] for step in ("init", "setup", "bootstrap")}
    assert hooks["init"]["helm.sh/hook"] == hooks["setup"]["helm.sh/hook"] == "post-install,pre-upgrade"
    assert hooks["bootstrap"]["helm.sh/hook"] == "post-install,post-upgrade"
    weights = [int(hooks[step]["helm.sh/hook-weight"]) for step in ("init", "setup", "bootstrap")]
    assert weights == sorted(set(weights))  # in this order, none alongside another
    config = named(rendered, "ConfigMap", f"{FULLNAME}-setup")["metadata"]["annotations"]
    assert config["helm.sh/hook"] == "post-install,pre-upgrade"
    assert int(config["helm.sh/hook-weight"]) < weights[0]
    (init,) = job(rendered, "init")["spec"]["template"]["spec"]["containers"]
    (setup,) = job(rendered, "setup")["spec"]["template"]["spec"]["initContainers"]
    assert init["args"][0] == "init"
    assert setup["args"][0] == "setup"
    assert setup["args"][setup["args"].index("--steps") + 1] == "/etc/zitadel/config/steps.yaml"


def test_setup_creates_the_orchestrators_service_user_and_hands_its_key_over(
    renders: dict[str, list[Manifest]],
) -> None:
    rendered = renders["example"]
    steps = yaml.safe_load(named(rendered, "ConfigMap", f"{FULLNAME}-setup")["data"]["steps.yaml"])[
        "FirstInstance"
    ]
    machine = steps["Org"]["Machine"]
    assert machine["Machine"]["Username"] == "flexplane-orchestrator"
    assert machine["MachineKey"]["Type"] == 1  # JSON
    spec = job(rendered, "setup")["spec"]["template"]["spec"]
    (setup,), (handover,) = spec["initContainers"], spec["containers"]
    written = {m["name"]: m["mountPath"] for m in setup["volumeMounts"]}["machinekey"]
    read = {m["name"]: m["mountPath"] for m in handover["volumeMounts"]}["machinekey"]
    assert steps["MachineKeyPath"].startswith(written + "/")
    assert bootstrap_settings(rendered, "setup")["keyFile"] == steps["MachineKeyPath"].replace(written, read)
    assert handover["command"][-1] == "handover"
    (volume,) = [v for v in spec["volumes"] if v["name"] == "machinekey"]
    assert volume["emptyDir"]["medium"] == "Memory"
    settings = bootstrap_settings(rendered, "setup")
    assert (settings["serviceUserNamespace"], settings["serviceUserSecret"], settings["keyKey"]) == (
        "flexplane", "flexplane-zitadel-service-user", "key.json",
    )  # fmt: skip


def test_the_handover_may_write_the_two_secrets_it_hands_over_and_read_no_other(
    renders: dict[str, list[Manifest]],
) -> None:
    rendered = renders["example"]
    (role,) = [m for m in rendered if m["kind"] == "Role"]
    (binding,) = [m for m in rendered if m["kind"] == "RoleBinding"]
    assert role["metadata"]["namespace"] == binding["metadata"]["namespace"] == "flexplane"
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": f"{FULLNAME}-setup", "namespace": NAMESPACE}
    ]
    assert not kinds(rendered) & {"ClusterRole", "ClusterRoleBinding"}
    for rule in role["rules"]:
        assert rule["resources"] == ["secrets"]
        if set(rule["verbs"]) != {"create"}:  # creation cannot be narrowed to a name
            assert set(rule["verbs"]) <= {"get", "patch"}
            assert sorted(rule["resourceNames"]) == [
                "flexplane-portal-oidc",
                "flexplane-zitadel-service-user",
            ]


def test_only_the_handover_and_bootstrap_get_an_api_token(rendered: list[Manifest]) -> None:
    for workload, spec in pod_specs(rendered).items():
        assert spec["automountServiceAccountToken"] is False, workload
        for container in containers(spec):
            mounts = {m["name"] for m in container.get("volumeMounts", [])}
            assert ("api-token" in mounts) == (container["name"] in {"handover", "bootstrap"}), workload


def test_the_project_is_made_with_the_roles_admin_user_and_org_owner(rendered: list[Manifest]) -> None:
    settings = bootstrap_settings(rendered)
    assert [role["key"] for role in settings["roles"]] == ["ADMIN", "USER", "ORG_OWNER"]
    assert settings["project"] == "flexplane"
    assert settings["adminRoles"] == ["ADMIN"]


def test_the_schema_refuses_a_project_without_flexplanes_roles(chart: helm_python.Chart) -> None:
    with pytest.raises(helm_python.HelmValuesError, match="roles"):
        render(chart, MINIMAL | {"project": {"roles": [{"key": "ADMIN"}, {"key": "USER"}]}})


def test_the_bootstrap_calls_zitadel_as_its_external_domain(renders: dict[str, list[Manifest]]) -> None:
    # Zitadel finds its instance by the Host header: the Service's name alone would be refused.
    settings = bootstrap_settings(renders["example"])
    assert settings["apiURL"] == f"http://{FULLNAME}.{NAMESPACE}.svc:8080"
    assert settings["host"] == "id.acme.example"
    assert settings["issuer"] == "https://id.acme.example"
    assert settings["portal"] == {
        "url": "https://cloud.acme.example", "namespace": "flexplane", "secret": "flexplane-portal-oidc",
    }  # fmt: skip


# --- TLS and exposure -------------------------------------------------------------------------


def test_the_ingress_terminates_tls_for_the_external_domain(renders: dict[str, list[Manifest]]) -> None:
    rendered = renders["example"]
    ingress = named(rendered, "Ingress", FULLNAME)["spec"]
    assert ingress["tls"] == [{"hosts": ["id.acme.example"], "secretName": "id-acme-example-tls"}]
    assert [rule["host"] for rule in ingress["rules"]] == ["id.acme.example"]
    zitadel = pod_specs(rendered)[f"Deployment/{FULLNAME}"]["containers"][0]
    assert zitadel["args"][zitadel["args"].index("--tlsMode") + 1] == "external"
    (port,) = named(rendered, "Service", FULLNAME)["spec"]["ports"]
    assert port["appProtocol"] == "kubernetes.io/h2c"


def test_zitadel_may_terminate_tls_itself(renders: dict[str, list[Manifest]]) -> None:
    rendered = renders["external-database"]
    assert "Ingress" not in kinds(rendered)
    zitadel = pod_specs(rendered)[f"Deployment/{FULLNAME}"]
    container = zitadel["containers"][0]
    assert container["args"][container["args"].index("--tlsMode") + 1] == "enabled"
    assert {v["name"]: v.get("secret", {}).get("secretName") for v in zitadel["volumes"]}[
        "tls"
    ] == "zitadel-tls"
    assert {
        container[p]["httpGet"]["scheme"] for p in ("startupProbe", "livenessProbe", "readinessProbe")
    } == {"HTTPS"}
    config = yaml.safe_load(named(rendered, "ConfigMap", f"{FULLNAME}-config")["data"]["config.yaml"])
    assert config["TLS"]["Enabled"] is True
    assert config["TLS"]["CertPath"].startswith(
        {m["name"]: m["mountPath"] for m in container["volumeMounts"]}["tls"]
    )
    assert bootstrap_settings(rendered)["apiURL"] == "https://id.lab.example"


def test_plain_http_with_an_https_issuer_is_refused(chart: helm_python.Chart) -> None:
    with pytest.raises(helm_python.HelmRenderError, match=r"tls\.mode none"):
        render(chart, MINIMAL | {"tls": {"mode": "none"}})


def test_every_container_is_locked_down(rendered: list[Manifest]) -> None:
    for workload, spec in pod_specs(rendered).items():
        assert spec["securityContext"]["runAsNonRoot"] is True, workload
        assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
        for container in containers(spec):
            context = container["securityContext"]
            assert context["readOnlyRootFilesystem"] is True, workload
            assert context["allowPrivilegeEscalation"] is False
            assert context["capabilities"] == {"drop": ["ALL"]}


@pytest.mark.parametrize("values", ["example", "k3s"])
def test_the_tenant_chart_mounts_the_secrets_the_identity_chart_hands_over(
    renders: dict[str, list[Manifest]], values: str
) -> None:
    tenant = yaml.safe_load((TENANT / "ci" / f"{values}-values.yaml").read_text())
    settings = bootstrap_settings(renders[values])
    assert tenant["zitadelServiceUser"]["secretName"] == settings["serviceUserSecret"]
    assert tenant["zitadelServiceUser"]["key"] == settings["keyKey"]
    assert tenant["config"]["namespace"] == settings["serviceUserNamespace"]
    assert tenant["config"]["portal"]["clientSecret"]["secretName"] == settings["portal"]["secret"]
    assert tenant["config"]["oidc"]["issuer"] == settings["issuer"]
    assert tenant["ingress"]["hosts"][0] == settings["portal"]["url"].removeprefix("https://")


def test_the_documented_k3s_install_of_the_tenant_chart_renders_valid_manifests() -> None:
    # The identity chart's k3s values are among VALUES above; the tenant chart's are rendered here.
    values = yaml.safe_load((TENANT / "ci" / "k3s-values.yaml").read_text())
    with helm_python.Chart.load(TENANT) as tenant:
        rendered = manifests(tenant.render(values, name="flextenant", namespace="flexplane", is_install=True))
    assert invalid(rendered) == []
    assert {"Deployment", "Ingress", "ValidatingAdmissionPolicy"} <= kinds(rendered)


# --- disruptions ------------------------------------------------------------------------------


def test_several_zitadel_replicas_get_a_disruption_budget_and_one_gets_none(
    renders: dict[str, list[Manifest]],
) -> None:
    budget = named(renders["example"], "PodDisruptionBudget", FULLNAME)["spec"]
    zitadel = named(renders["example"], "Deployment", FULLNAME)["spec"]
    assert zitadel["replicas"] == 2
    assert budget["selector"] == zitadel["selector"]
    assert budget["maxUnavailable"] == 1
    # One replica: a budget would block every node drain.
    assert "PodDisruptionBudget" not in kinds(renders["minimal"])
