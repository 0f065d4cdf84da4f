"""The providers' shared parts: conditions in metav1's shape, owners and finalizers, kinds, CRDs (pure); and
what the management cluster's failures become for a handler (``KubeError``, transient or not)."""

from __future__ import annotations

import datetime
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client

from devstack.kube import KubeServer
from orchestrator.sources.kube_objects import MACHINE, PROXMOX_MACHINE, vdc_of_namespace
from providers.common import conditions
from providers.common.crds import load_crds
from providers.common.identity import SERVICE_IDENTITY, service_context
from providers.common.kube import Kube, KubeError
from providers.common.objects import owner_reference, with_finalizer, without_finalizer
from providers.common.operator import Provider, connection_info

T0 = datetime.datetime(2026, 12, 1, 10, 0, tzinfo=datetime.UTC)
T1 = T0 + datetime.timedelta(minutes=5)


def test_a_condition_has_every_field_of_metav1_condition() -> None:
    made = conditions.condition("Ready", False, "WaitingForBootstrapData", "waiting", 3, T0)
    assert made == {
        "type": "Ready",
        "status": "False",
        "reason": "WaitingForBootstrapData",
        "message": "waiting",
        "lastTransitionTime": "2026-12-01T10:00:00Z",
        "observedGeneration": 3,
    }


def test_a_condition_status_is_true_false_or_unknown_only() -> None:
    assert conditions.condition("Ready", "Unknown", "R")["status"] == "Unknown"
    with pytest.raises(ValueError, match="True, False or Unknown"):
        conditions.condition("Ready", "yes", "R")


def test_setting_a_condition_keeps_its_transition_time_while_its_status_stays() -> None:
    first = [conditions.condition("Ready", False, "Provisioning", "", 1, T0)]
    again = conditions.set_condition(
        first, conditions.condition("Ready", False, "ProvisioningFailed", "x", 1, T1)
    )
    assert again[0]["lastTransitionTime"] == "2026-12-01T10:00:00Z"
    assert again[0]["reason"] == "ProvisioningFailed"
    flipped = conditions.set_condition(again, conditions.condition("Ready", True, "Provisioned", "", 1, T1))
    assert flipped[0]["lastTransitionTime"] == "2026-12-01T10:05:00Z"
    assert conditions.is_true(flipped, "Ready")


def test_setting_a_condition_of_another_type_appends_it_and_keeps_the_others() -> None:
    ready = conditions.condition("Ready", True, "Provisioned", now=T0)
    both = conditions.set_condition([ready], conditions.condition("Available", False, "Waiting", now=T1))
    assert [c["type"] for c in both] == ["Ready", "Available"]
    assert both[0] == ready


def test_conditions_that_differ_only_in_their_time_are_the_same() -> None:
    assert conditions.same(
        [conditions.condition("Ready", True, "Provisioned", now=T0)],
        [conditions.condition("Ready", True, "Provisioned", now=T1)],
    )
    assert not conditions.same(
        [conditions.condition("Ready", True, "Provisioned")],
        [conditions.condition("Ready", False, "Deleting")],
    )


def test_the_owner_machine_is_found_by_group_and_kind_at_any_version() -> None:
    obj = {
        "metadata": {
            "ownerReferences": [
                {"apiVersion": "example.com/v1", "kind": "Machine", "name": "not-this", "uid": "1"},
                {"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Machine", "name": "m1", "uid": "2"},
            ]
        }
    }
    found = owner_reference(obj, MACHINE)
    assert found is not None
    assert found["name"] == "m1"
    assert owner_reference({"metadata": {}}, MACHINE) is None


def test_finalizers_are_added_and_removed_once() -> None:
    obj = {"metadata": {"finalizers": ["other"]}}
    assert with_finalizer(obj, "mine") == ["other", "mine"]
    assert with_finalizer({"metadata": {"finalizers": ["mine"]}}, "mine") is None
    assert without_finalizer({"metadata": {"finalizers": ["other", "mine"]}}, "mine") == ["other"]
    assert without_finalizer(obj, "mine") is None


def test_a_vdc_namespace_names_its_vdc_and_no_other_namespace_does() -> None:
    assert vdc_of_namespace("vdc-demo") == "demo"
    assert vdc_of_namespace("vdc-") is None
    assert vdc_of_namespace("default") is None
    assert str(PROXMOX_MACHINE) == "proxmoxmachines.infrastructure.flexplane.io"


def test_the_service_identity_is_a_self_service_member_of_the_one_vdc() -> None:
    ctx = service_context("demo")
    assert ctx.vdc == "demo"
    assert ctx.principal.subject == SERVICE_IDENTITY
    assert ctx.principal.roles == frozenset({"USER", "vdc:demo"})
    assert not ctx.principal.is_admin


def test_crds_are_read_from_every_yaml_document_of_the_folder(tmp_path: Path) -> None:
    (tmp_path / "b.yaml").write_text(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: b.x.io}\n"
        "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: not-a-crd}\n"
    )
    (tmp_path / "a.yaml").write_text(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: a.x.io}\n"
    )
    assert [c["metadata"]["name"] for c in load_crds(tmp_path)] == ["a.x.io", "b.x.io"]


def test_each_provider_keeps_its_own_finalizer_and_kopf_state_in_annotations() -> None:
    provider = Provider(
        "infrastructure", "infrastructure.flexplane.io/finalizer", "infrastructure.flexplane.io"
    )
    settings = provider.settings()
    assert settings.persistence.finalizer == "infrastructure.flexplane.io/finalizer"
    assert settings.peering.standalone
    assert settings.scanning.disabled
    assert type(settings.persistence.progress_storage).__name__ == "AnnotationsProgressStorage"


def test_kopf_logs_in_with_the_kubeconfigs_server_certificate_and_token() -> None:
    from kubernetes import client

    configuration = client.Configuration()
    configuration.host = "https://10.0.0.1:6443"
    configuration.ssl_ca_cert = "/ca.crt"
    configuration.cert_file = "/client.crt"
    configuration.key_file = "/client.key"
    configuration.api_key = {"BearerToken": "abc"}
    configuration.api_key_prefix = {"BearerToken": "Bearer"}
    info = connection_info(configuration)
    assert (info.server, info.ca_path, info.certificate_path, info.private_key_path) == (
        "https://10.0.0.1:6443",
        "/ca.crt",
        "/client.crt",
        "/client.key",
    )
    assert (info.scheme, info.token, info.insecure) == ("Bearer", "abc", False)


# ------------------------------------------------------------------------------------ the management cluster


@pytest.fixture(scope="module")
def management() -> Iterator[Kube]:
    """Our kinds served (from the chart), none of them made."""
    with KubeServer.start() as server:
        server.install_crds(load_crds())
        configuration = client.Configuration()
        configuration.host = server.url
        with client.ApiClient(configuration) as api_client:
            yield Kube(api_client, timeout=2.0)


def test_what_is_not_there_reads_as_nothing_and_a_write_to_it_is_refused_for_good(management: Kube) -> None:
    assert management.get(PROXMOX_MACHINE, "vdc-demo", "nothing") is None
    assert management.list(MACHINE, "vdc-demo") == []  # Cluster API core's kinds are not served here
    assert management.secret_value("vdc-demo", "nothing", "value") is None
    with pytest.raises(KubeError) as refused:
        management.patch_status(PROXMOX_MACHINE, "vdc-demo", "nothing", {"ready": True})
    assert (refused.value.status, refused.value.transient) == (404, False)
    assert refused.value.message.startswith("writing the status of ProxmoxMachine vdc-demo/nothing: ")


def test_a_management_cluster_that_does_not_answer_is_worth_retrying() -> None:
    with socket.socket() as closed:  # a loopback port of the test's own, with nothing listening
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    configuration = client.Configuration()
    configuration.host = f"http://127.0.0.1:{port}"
    configuration.retries = False
    with client.ApiClient(configuration) as nowhere, pytest.raises(KubeError) as unanswered:
        Kube(nowhere, timeout=2.0).get(PROXMOX_MACHINE, "vdc-demo", "web-1")
    assert unanswered.value.transient
    assert "did not answer" in unanswered.value.message
