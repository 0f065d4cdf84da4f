"""The infrastructure provider's pure parts: specs, provider IDs, statuses, the create it asks for, and the
cloud-init meta data and SMBIOS uuid the create path gives a machine."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from orchestrator.services.networks.nics import NicRequest
from orchestrator.services.vms import Bootstrap, meta_data
from orchestrator.sources.qemu_config import parse_config, parse_smbios_uuid
from providers.common import conditions
from providers.common.crds import load_crds
from providers.infrastructure import spec as s
from providers.infrastructure.machines import create_request

UUID = "5c2f6b0e-8e0a-4d8e-9d55-0a1b2c3d4e5f"


def machine_object(**spec: object) -> dict[str, object]:
    return {
        "metadata": {"name": "pm-1", "namespace": "vdc-demo", "uid": "uid-123", "generation": 2},
        "spec": {"computeProfile": "small", "storageProfile": "standard", "image": "debian-12", **spec},
    }


def test_a_machine_spec_is_parsed_with_its_optional_fields() -> None:
    parsed = s.MachineSpec.parse(machine_object(diskGb=30, network="zone-a/default"))
    assert parsed == s.MachineSpec("small", "standard", "debian-12", 30, "zone-a/default", None)


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"computeProfile": ""}, "spec.computeProfile"),
        ({"image": 7}, "spec.image"),
        ({"diskGb": 0}, "spec.diskGb"),
        ({"diskGb": True}, "spec.diskGb"),
        ({"diskGb": "30"}, "spec.diskGb"),
    ],
)
def test_a_machine_spec_that_cannot_work_names_its_field(spec: dict[str, object], field: str) -> None:
    with pytest.raises(s.SpecError) as refused:
        s.MachineSpec.parse(machine_object(**spec))
    assert refused.value.field == field


def test_a_cluster_spec_needs_its_vdc_and_network() -> None:
    assert s.ClusterSpec.parse({"spec": {"vdc": "demo", "network": "zone-a/default"}}) == s.ClusterSpec(
        "demo", "zone-a/default"
    )
    with pytest.raises(s.SpecError, match=r"spec\.network"):
        s.ClusterSpec.parse({"spec": {"vdc": "demo"}})


def test_the_provider_id_is_the_smbios_uuid_and_back() -> None:
    assert s.provider_id(UUID.upper()) == f"proxmox://{UUID}"
    assert s.uuid_of(f"proxmox://{UUID}") == UUID
    assert s.uuid_of("proxmox://zone-a/100") is None
    assert s.uuid_of(UUID) is None
    with pytest.raises(ValueError, match="SMBIOS"):
        s.provider_id("not-a-uuid")


def test_the_addresses_are_the_vms_then_its_hostname() -> None:
    assert s.machine_addresses("m1", ["10.0.0.5", "10.0.0.5", "10.1.0.7"]) == [
        {"type": "InternalIP", "address": "10.0.0.5"},
        {"type": "InternalIP", "address": "10.1.0.7"},
        {"type": "Hostname", "address": "m1"},
    ]


def test_the_failure_domains_are_the_zones_and_none_for_control_planes() -> None:
    assert s.failure_domains(["zone-a", "zone-b"]) == [
        {"name": "zone-a", "controlPlane": False},
        {"name": "zone-b", "controlPlane": False},
    ]


def test_the_machine_and_cluster_say_bootstrap_secret_zone_and_infrastructure() -> None:
    machine = {
        "metadata": {"name": "m1"},
        "spec": {"clusterName": "c1", "bootstrap": {"dataSecretName": "m1"}, "failureDomain": "zone-b"},
    }
    assert s.bootstrap_secret_name(machine) == "m1"
    assert s.bootstrap_secret_name({"spec": {"bootstrap": {}}}) is None
    assert s.owner_machine_failure_domain(machine) == "zone-b"
    assert s.cluster_name({}, machine) == "c1"
    assert s.cluster_name({"metadata": {"labels": {"cluster.x-k8s.io/cluster-name": "c2"}}}) == "c2"
    cluster = {
        "spec": {
            "infrastructureRef": {
                "apiGroup": "infrastructure.flexplane.io",
                "kind": "ProxmoxCluster",
                "name": "c1",
            }
        }
    }
    assert s.infrastructure_ref_name(cluster, "ProxmoxCluster", "infrastructure.flexplane.io") == "c1"
    assert s.infrastructure_ref_name(cluster, "ProxmoxCluster", "example.com") is None


def test_the_create_asked_is_the_machines_name_zone_and_uid_with_the_bootstrap_data() -> None:
    machine = {"metadata": {"name": "w-abc"}, "spec": {"failureDomain": "zone-a"}}
    request = create_request(
        machine_object(diskGb=30),
        machine,
        s.MachineSpec.parse(machine_object(diskGb=30)),
        "zone-a/default",
        "#x",
    )
    assert request.name == "w-abc"
    assert request.zone == "zone-a"
    assert request.idempotency_key == "uid-123"
    assert request.disk_gb == 30
    assert request.networks == (NicRequest("zone-a/default"),)
    assert request.bootstrap == Bootstrap(user_data="#x", hostname="w-abc")


def test_the_meta_data_names_the_instance_by_its_smbios_uuid_and_its_hostname() -> None:
    assert meta_data(UUID, "w-abc") == f"instance-id: {UUID}\nlocal-hostname: w-abc\n"


def test_the_smbios_uuid_is_read_from_the_vms_config() -> None:
    assert parse_config({"smbios1": f"manufacturer=x,uuid={UUID.upper()}"}).smbios_uuid == UUID
    assert parse_config({}).smbios_uuid is None
    assert parse_smbios_uuid("uuid=nope") is None


# ------------------------------------------------------------------------------------------ the CRDs' schemas


def _schema(plural: str) -> dict[str, Any]:
    """The OpenAPI v3 schema of our CRD (charts/providers/crds), as JSON Schema (Kubernetes' extensions are
    annotations a validator ignores)."""
    [crd] = [c for c in load_crds() if c["metadata"]["name"] == f"{plural}.infrastructure.flexplane.io"]
    schema: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


def test_a_provisioned_machine_as_the_provider_writes_it_fits_its_crds_schema() -> None:
    obj = machine_object(providerID=s.provider_id(UUID), network="zone-a/k8s")
    obj["apiVersion"], obj["kind"] = "infrastructure.flexplane.io/v1alpha1", "ProxmoxMachine"
    ready = conditions.condition("Ready", True, s.PROVISIONED, "VM zone-a/105 (running)", 2)
    obj["status"] = {**s.machine_status("w-abc", ["10.0.0.5"], "zone-a", "pve1", 105), "conditions": [ready]}
    jsonschema.validate(obj, _schema("proxmoxmachines"))


def test_a_provisioned_cluster_as_the_provider_writes_it_fits_its_crds_schema() -> None:
    obj: dict[str, Any] = {
        "apiVersion": "infrastructure.flexplane.io/v1alpha1",
        "kind": "ProxmoxCluster",
        "metadata": {"name": "k1", "namespace": "vdc-demo"},
        "spec": {
            "vdc": "demo",
            "network": "zone-a/k8s",
            "controlPlaneEndpoint": {"host": "10.1.2.3", "port": 6443},
        },
    }
    ready = conditions.condition("Ready", False, s.VDC_MISMATCH, "spec.vdc is 'other'", 1)
    obj["status"] = {**s.cluster_status(["zone-a", "zone-b"]), "conditions": [ready]}
    jsonschema.validate(obj, _schema("proxmoxclusters"))
