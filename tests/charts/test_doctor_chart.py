"""The flextenant chart's preflight Job (``doctor.enabled``): off by default; when on, a ``helm test`` hook
that runs ``manage.py doctor`` with exactly the orchestrator's settings and files, with options the
command takes, as an account of its own that reads and never writes or reads Secrets (issue 32, item 9).
"""

from __future__ import annotations

from typing import Any

import helm_python
import pytest

from orchestrator.management.commands.doctor import Command
from tests.charts.kit import env_of, kinds, loaded, sole_container
from tests.charts.rbac import Account, Cluster
from tests.charts.test_flextenant_chart import (
    CHART,
    NAMESPACE,
    RELEASE,
    Manifest,
    component,
    invalid,
    manifests,
    render,
)

chart = loaded(CHART)
DOCTOR = f"{RELEASE}-flextenant-doctor"
ON = {
    "doctor": {"enabled": True, "clusterIssuer": "letsencrypt", "loadBalancer": False, "deadline": 20},
    "zitadelServiceUser": {"secretName": "flexplane-zitadel-service-user"},
}


@pytest.fixture(scope="module")
def doctor_on(chart: helm_python.Chart) -> list[Manifest]:
    return manifests(render(chart, ON))


def job_container(rendered: list[Manifest]) -> dict[str, Any]:
    return sole_container(component(rendered, "Job", "doctor")["spec"]["template"]["spec"])


def test_no_doctor_is_rendered_by_default(chart: helm_python.Chart) -> None:
    default = manifests(render(chart, {}))
    assert "Job" not in kinds(default)
    assert not [m for m in default if m["metadata"]["name"] == DOCTOR]


def test_the_job_is_a_helm_test_that_validates(doctor_on: list[Manifest]) -> None:
    job = component(doctor_on, "Job", "doctor")
    assert job["metadata"]["annotations"]["helm.sh/hook"] == "test"
    assert job["metadata"]["namespace"] == NAMESPACE
    assert job["spec"]["backoffLimit"] == 0
    assert job["spec"]["template"]["spec"]["restartPolicy"] == "Never"
    assert invalid(doctor_on) == []


def test_the_job_runs_the_command_with_options_it_takes(doctor_on: list[Manifest]) -> None:
    container = job_container(doctor_on)
    assert container["command"] == ["python", "-m", "django", "doctor"]
    assert container["args"] == [
        "--issuer=flexplane-agent-ca",
        "--cluster-issuer=letsencrypt",
        "--no-load-balancer",
        "--deadline=20",
    ]
    options = vars(Command().create_parser("manage.py", "doctor").parse_args(container["args"]))
    assert (
        options["issuer"],
        options["cluster_issuer"],
        options["no_load_balancer"],
        options["deadline"],
    ) == (
        "flexplane-agent-ca",
        "letsencrypt",
        True,
        20.0,
    )


def test_the_job_has_the_orchestrators_settings_and_files(doctor_on: list[Manifest]) -> None:
    container = job_container(doctor_on)
    orchestrator = sole_container(
        component(doctor_on, "Deployment", "orchestrator")["spec"]["template"]["spec"]
    )
    assert env_of(container) == env_of(orchestrator)
    assert env_of(container)["FLEXPLANE_ZITADEL_KEY_FILE"] == "/etc/flexplane/zitadel/key.json"
    mounts = {m["mountPath"] for m in orchestrator["volumeMounts"]}
    assert {m["mountPath"] for m in container["volumeMounts"]} == mounts
    assert container["securityContext"]["readOnlyRootFilesystem"] is True


def test_the_doctor_reads_as_its_own_account_and_never_writes_or_reads_secrets(
    doctor_on: list[Manifest],
) -> None:
    job = component(doctor_on, "Job", "doctor")
    assert job["spec"]["template"]["spec"]["serviceAccountName"] == DOCTOR
    role = component(doctor_on, "ClusterRole", "doctor")
    assert {verb for rule in role["rules"] for verb in rule["verbs"]} <= {"get", "list"}
    assert not [rule for rule in role["rules"] if {"secrets", "*"} & set(rule["resources"])]
    binding = component(doctor_on, "ClusterRoleBinding", "doctor")
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": DOCTOR, "namespace": NAMESPACE}]


# Every call the checks make (orchestrator/services/doctor.py): (verb, group, resource, namespace, name).
READS = (
    ("get", "apiextensions.k8s.io", "customresourcedefinitions", "", "clusters.cluster.x-k8s.io"),
    ("get", "apiextensions.k8s.io", "customresourcedefinitions", "", "issuers.cert-manager.io"),
    ("list", "clusterctl.cluster.x-k8s.io", "providers", "", None),
    ("get", "cert-manager.io", "issuers", NAMESPACE, "flexplane-agent-ca"),
    ("get", "cert-manager.io", "clusterissuers", "", "letsencrypt"),
    ("list", "", "services", "", None),
    ("list", "networking.k8s.io", "ingressclasses", "", None),
    ("list", "storage.k8s.io", "storageclasses", "", None),
)


def test_the_doctors_account_may_make_each_call_of_the_checks_and_no_write(doctor_on: list[Manifest]) -> None:
    cluster = Cluster(doctor_on)
    account = Account(NAMESPACE, DOCTOR)
    assert [read for read in READS if not cluster.rbac_allows(account, *read)] == []
    for namespace in (NAMESPACE, "kube-system", "vdc-acme"):
        assert cluster.reads_secrets(account, namespace) == []
        for verb in ("create", "update", "patch", "delete"):
            assert not cluster.rbac_allows(account, verb, "", "configmaps", namespace)
