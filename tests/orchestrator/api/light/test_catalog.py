"""The catalog through the API: queries, admin mutations, payload errors, and what lands in the cluster."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from devstack import seed
from orchestrator.sources.protocols import KubeApi
from tests import vmkit
from tests.apikit import Api
from tests.orchestrator.lightworld import LightWorld

CHECKSUM = "sha256:" + "0123456789abcdef" * 4
IMAGE_URL = "https://cloud.debian.org/images/cloud/bookworm/latest/debian-12-genericcloud-amd64.qcow2"


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def stored_spec(kube: KubeApi, kind: str, ident: str) -> dict[str, Any] | None:
    """The spec the management cluster holds for a catalog object, as the API stored it."""
    entry = kube.get_catalog(kind, ident)
    return None if entry is None else entry.spec


def mutate(api: Api, document: str, variables: dict[str, Any], user: str = "admin") -> dict[str, Any]:
    """Run a one-field mutation and return its payload (asserting there are no top-level errors)."""
    answer = api(document, user=user, variables=variables)
    assert answer.errors == [], answer.body
    (payload,) = answer.data.values()
    assert isinstance(payload, dict)
    return payload


CREATE_PROFILE = """mutation($input: ComputeProfileInput!) {
  createComputeProfile(input: $input) {
    computeProfile { name vcpus memoryMib cpuType description } errors { field message code } } }"""
UPDATE_PROFILE = """mutation($name: String!, $input: ComputeProfileUpdateInput!) {
  updateComputeProfile(name: $name, input: $input) {
    computeProfile { name vcpus memoryMib cpuType } errors { field message code } } }"""
DELETE_PROFILE = """mutation($name: String!) {
  deleteComputeProfile(name: $name) { computeProfile { name } errors { field message code } } }"""

CREATE_STORAGE = """mutation($input: StorageProfileInput!) {
  createStorageProfile(input: $input) {
    storageProfile { name storages { zone storage } defaultGb minGb maxGb bus format readMbps writeMbps
                     readIops writeIops }
    errors { field message code } } }"""
UPDATE_STORAGE = """mutation($name: String!, $input: StorageProfileUpdateInput!) {
  updateStorageProfile(name: $name, input: $input) {
    storageProfile { name maxGb readMbps } errors { field message code } } }"""
DELETE_STORAGE = """mutation($name: String!) {
  deleteStorageProfile(name: $name) { storageProfile { name } errors { field message code } } }"""

CREATE_IMAGE = """mutation($input: ImageInput!) {
  createImage(input: $input) {
    image { name osFamily sourceUrl checksum defaultUser minDiskGb } errors { field message code } } }"""
UPDATE_IMAGE = """mutation($name: String!, $input: ImageUpdateInput!) {
  updateImage(name: $name, input: $input) { image { name minDiskGb } errors { field message code } } }"""
DELETE_IMAGE = """mutation($name: String!) {
  deleteImage(name: $name) { image { name } errors { field message code } } }"""

CREATE_ZONE = """mutation($input: ZoneInput!) {
  createZone(input: $input) { zone { id name description hosts { name } } errors { field message code } } }"""
UPDATE_ZONE = """mutation($id: ID!, $input: ZoneUpdateInput!) {
  updateZone(id: $id, input: $input) { zone { id name description } errors { field message code } } }"""
DELETE_ZONE = """mutation($id: ID!) { deleteZone(id: $id) { zone { id } errors { field message code } } }"""

CREATE_HOST = """mutation($input: HostInput!) {
  createHost(input: $input) {
    host { id zone name endpoint cordoned online memoryOvercommit cpuOvercommit }
    errors { field message code } } }"""
UPDATE_HOST = """mutation($zone: String!, $host: String!, $input: HostUpdateInput!) {
  updateHost(zone: $zone, host: $host, input: $input) {
    host { id cordoned } errors { field message code } } }"""
DELETE_HOST = """mutation($zone: String!, $host: String!) {
  removeHost(zone: $zone, host: $host, force: true) { host { id } errors { field message code } } }"""


def profile_input(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "vcpus": 2, "memoryMib": 2048, **extra}


def storage_input(name: str, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "storages": [{"zone": "zone-a", "storage": "local-lvm"}, {"zone": "zone-b", "storage": "ceph-pool"}],
        "defaultGb": 20,
        "minGb": 10,
        "maxGb": 100,
        **extra,
    }


def image_input(name: str, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "osFamily": "debian",
        "sourceUrl": IMAGE_URL,
        "checksum": CHECKSUM,
        "defaultUser": "debian",
        "minDiskGb": 3,
        **extra,
    }


@pytest.fixture
def cleanup(api: Api) -> Iterator[list[tuple[str, dict[str, Any]]]]:
    """Mutations (document, variables) to run as admin after the test, in reverse order, whatever happened."""
    undo: list[tuple[str, dict[str, Any]]] = []
    yield undo
    for document, variables in reversed(undo):
        api(document, user="admin", variables=variables)


def created(
    api: Api, cleanup: list[tuple[str, dict[str, Any]]], create: str, delete: str, values: dict[str, Any]
) -> tuple[str, dict[str, Any]]:
    """An admin's create of an offering from ``values`` under a name of its own (``values``' name and a
    unique suffix), deleted after the test: the name and the payload."""
    name = unique(values["name"])
    cleanup.append((delete, {"name": name}))
    return name, mutate(api, create, {"input": {**values, "name": name}})


# ---------------------------------------------------------------------------------------- queries


def test_zones_list_their_hosts_and_whether_each_is_online(api: Api) -> None:
    answer = api("{ zones { id name hosts { name online cordoned } } }", user="alice")
    assert answer.errors == []
    zones = {z["id"]: z for z in answer.data["zones"]}
    assert set(zones) == {"zone-a", "zone-b"}
    assert zones["zone-a"]["name"] == "Zone A"
    assert zones["zone-a"]["hosts"] == [
        {"name": f"pve{n}", "online": True, "cordoned": False} for n in (1, 2, 3)
    ]


def test_users_read_the_seeded_profiles_and_images(api: Api) -> None:
    answer = api(
        """{ computeProfiles { name vcpus memoryMib cpuType }
             storageProfiles { name storages { zone storage } defaultGb minGb maxGb bus format readMbps }
             images { name osFamily defaultUser minDiskGb checksum } }""",
        user="bob",
    )
    assert answer.errors == []
    assert answer.data["computeProfiles"] == [
        {"name": "large", "vcpus": 4, "memoryMib": 8192, "cpuType": "x86-64-v2-AES"},
        {"name": "medium", "vcpus": 2, "memoryMib": 4096, "cpuType": "x86-64-v2-AES"},
        {"name": "small", "vcpus": 1, "memoryMib": 1024, "cpuType": "x86-64-v2-AES"},
    ]
    # The seed's one storage profile, on the local LVM of every zone.
    (standard,) = seed.STORAGE_PROFILES
    asked = ("name", "defaultGb", "minGb", "maxGb", "bus", "format", "readMbps")
    local = [{"zone": zone, "storage": "local-lvm"} for zone in ("zone-a", "zone-b")]
    assert answer.data["storageProfiles"] == [{**{key: standard[key] for key in asked}, "storages": local}]
    images = {i["name"]: i for i in answer.data["images"]}
    assert set(images) == {"debian-12", "ubuntu-24.04"}
    assert images["ubuntu-24.04"]["defaultUser"] == "ubuntu"
    assert images["debian-12"]["checksum"].startswith("sha256:")


def test_hosts_carry_their_zone_and_overcommit_and_only_admin_sees_endpoints(
    api: Api, light: LightWorld
) -> None:
    query = (
        '{ hosts(zone: "zone-b") { id zone name online cordoned endpoint memoryOvercommit cpuOvercommit } }'
    )
    as_admin = api(query, user="admin").data["hosts"]
    assert [h["id"] for h in as_admin] == ["zone-b/pve1", "zone-b/pve2", "zone-b/pve3"]
    assert as_admin[0]["endpoint"] == light.endpoints[("zone-b", "pve1")]
    assert (as_admin[0]["memoryOvercommit"], as_admin[0]["cpuOvercommit"]) == (1.0, 4.0)
    as_user = api(query, user="alice").data["hosts"]
    assert {h["endpoint"] for h in as_user} == {None}
    assert all(h["online"] for h in as_user)
    assert len(api("{ hosts { id } }", user="alice").data["hosts"]) == 6


# ----------------------------------------------------------------------------------- admin CRUD


def test_admin_creates_updates_and_deletes_a_compute_profile(
    api: Api, kube: KubeApi, cleanup: list[tuple[str, dict[str, Any]]]
) -> None:
    name, made = created(
        api, cleanup, CREATE_PROFILE, DELETE_PROFILE, profile_input("cp", description="two and two")
    )
    assert made == {
        "computeProfile": {
            "name": name,
            "vcpus": 2,
            "memoryMib": 2048,
            "cpuType": "x86-64-v2-AES",
            "description": "two and two",
        },
        "errors": [],
    }
    assert stored_spec(kube, "compute-profile", name) == {
        "name": name,
        "vcpus": 2,
        "memoryMib": 2048,
        "cpuType": "x86-64-v2-AES",
        "description": "two and two",
    }
    assert name in [
        p["name"] for p in api("{ computeProfiles { name } }", user="alice").data["computeProfiles"]
    ]

    updated = mutate(api, UPDATE_PROFILE, {"name": name, "input": {"vcpus": 6, "cpuType": "host"}})
    assert updated["computeProfile"] == {"name": name, "vcpus": 6, "memoryMib": 2048, "cpuType": "host"}
    assert stored_spec(kube, "compute-profile", name)["vcpus"] == 6  # type: ignore[index]

    deleted = mutate(api, DELETE_PROFILE, {"name": name})
    assert deleted == {"computeProfile": {"name": name}, "errors": []}
    assert stored_spec(kube, "compute-profile", name) is None


def test_admin_creates_updates_and_deletes_a_storage_profile(
    api: Api, kube: KubeApi, cleanup: list[tuple[str, dict[str, Any]]]
) -> None:
    name, made = created(
        api,
        cleanup,
        CREATE_STORAGE,
        DELETE_STORAGE,
        storage_input("sp", bus="virtio", readMbps=300, writeIops=900),
    )
    assert made["errors"] == []
    assert made["storageProfile"] == {
        "name": name,
        "storages": [{"zone": "zone-a", "storage": "local-lvm"}, {"zone": "zone-b", "storage": "ceph-pool"}],
        "defaultGb": 20,
        "minGb": 10,
        "maxGb": 100,
        "bus": "virtio",
        "format": "raw",
        "readMbps": 300,
        "writeMbps": None,
        "readIops": None,
        "writeIops": 900,
    }
    spec = stored_spec(kube, "storage-profile", name)
    assert spec is not None
    assert spec["storages"] == {"zone-a": "local-lvm", "zone-b": "ceph-pool"}

    updated = mutate(api, UPDATE_STORAGE, {"name": name, "input": {"maxGb": 500, "readMbps": None}})
    assert updated["storageProfile"] == {"name": name, "maxGb": 500, "readMbps": None}
    assert mutate(api, DELETE_STORAGE, {"name": name})["errors"] == []
    assert stored_spec(kube, "storage-profile", name) is None


def test_admin_creates_updates_and_deletes_an_image(
    api: Api, kube: KubeApi, cleanup: list[tuple[str, dict[str, Any]]]
) -> None:
    name, made = created(api, cleanup, CREATE_IMAGE, DELETE_IMAGE, image_input("img"))
    assert made["image"] == image_input(name)  # every field as it was given
    assert stored_spec(kube, "image", name)["sourceUrl"] == IMAGE_URL  # type: ignore[index]
    assert mutate(api, UPDATE_IMAGE, {"name": name, "input": {"minDiskGb": 8}})["image"] == {
        "name": name,
        "minDiskGb": 8,
    }
    assert mutate(api, DELETE_IMAGE, {"name": name})["image"] == {"name": name}
    assert stored_spec(kube, "image", name) is None


def test_admin_manages_zones_and_hosts_and_a_zone_with_hosts_stays(
    api: Api, kube: KubeApi, cleanup: list[tuple[str, dict[str, Any]]]
) -> None:
    zone = unique("zone")
    cleanup.append((DELETE_ZONE, {"id": zone}))
    made = mutate(api, CREATE_ZONE, {"input": {"id": zone, "name": "Lab", "description": "the lab rack"}})
    assert made["zone"] == {"id": zone, "name": "Lab", "description": "the lab rack", "hosts": []}
    assert stored_spec(kube, "zone", zone) == {
        "id": zone,
        "name": "Lab",
        "description": "the lab rack",
        # How its tenant networks are built: the defaults, as none were given.
        "network": {
            "type": "vxlan",
            "bridge": "vmbr0",
            "idFirst": 1000,
            "idLast": 4000,
            "mtu": 1450,
            "ranges": [],
            "dns": [],
            "routed": False,
        },
    }

    cleanup.append((DELETE_HOST, {"zone": zone, "host": "node1"}))
    host = mutate(api, CREATE_HOST, {"input": {"zone": zone, "host": "node1", "endpoint": "192.0.2.10:7443"}})
    assert host["host"] == {
        "id": f"{zone}/node1",
        "zone": zone,
        "name": "node1",
        "endpoint": "192.0.2.10:7443",
        "cordoned": False,
        "online": False,  # no Proxmox answers for this zone
        "memoryOvercommit": 1.0,
        "cpuOvercommit": 4.0,
    }
    assert stored_spec(kube, "host", f"{zone}.node1") == {
        "zone": zone,
        "node": "node1",
        "endpoint": "192.0.2.10:7443",
        "cordoned": False,
        "memoryOvercommit": 1.0,
        "cpuOvercommit": 4.0,
    }
    cordoned = mutate(api, UPDATE_HOST, {"zone": zone, "host": "node1", "input": {"cordoned": True}})
    assert cordoned["host"] == {"id": f"{zone}/node1", "cordoned": True}

    refused = mutate(api, DELETE_ZONE, {"id": zone})
    assert refused["zone"] is None
    assert [e["code"] for e in refused["errors"]] == ["CONFLICT"]
    assert "still has 1 host(s) (node1)" in refused["errors"][0]["message"]

    renamed = mutate(api, UPDATE_ZONE, {"id": zone, "input": {"name": "Lab 2"}})
    assert renamed["zone"] == {"id": zone, "name": "Lab 2", "description": "the lab rack"}

    assert mutate(api, DELETE_HOST, {"zone": zone, "host": "node1"})["host"] == {"id": f"{zone}/node1"}
    assert mutate(api, DELETE_ZONE, {"id": zone})["zone"] == {"id": zone}
    assert stored_spec(kube, "zone", zone) is None


# ---------------------------------------------------------------------------------- refusals


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"name": "Not_A_Name"}, "name"),
        ({"name": "-leading"}, "name"),
        ({"vcpus": 0}, "vcpus"),
        ({"vcpus": 1000}, "vcpus"),
        ({"memoryMib": 64}, "memoryMib"),
        ({"cpuType": "no spaces please"}, "cpuType"),
        ({"description": "x" * 5000}, "description"),
    ],
)
def test_each_bad_compute_profile_value_is_a_payload_error_naming_its_field(
    api: Api, change: dict[str, Any], field: str
) -> None:
    payload = mutate(api, CREATE_PROFILE, {"input": profile_input(unique("cp")) | change})
    assert payload["computeProfile"] is None
    assert [(e["field"], e["code"]) for e in payload["errors"]] == [(field, "INVALID")]
    assert payload["errors"][0]["message"]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"storages": [{"zone": "atlantis", "storage": "local-lvm"}]}, "storages"),
        ({"storages": [{"zone": "zone-a", "storage": "no/slashes"}]}, "storages"),
        ({"storages": []}, "storages"),
        (
            {"storages": [{"zone": "zone-a", "storage": "a1"}, {"zone": "zone-a", "storage": "b1"}]},
            "storages",
        ),
        ({"minGb": 0}, "minGb"),
        ({"minGb": 200, "maxGb": 100}, "minGb"),
        ({"defaultGb": 5}, "defaultGb"),
        ({"defaultGb": 101}, "defaultGb"),
        ({"maxGb": 100_000}, "maxGb"),
        ({"bus": "ide"}, "bus"),
        ({"format": "vmdk"}, "format"),
        ({"readMbps": 0}, "readMbps"),
        ({"writeIops": -5}, "writeIops"),
    ],
)
def test_each_bad_storage_profile_value_is_a_payload_error_naming_its_field(
    api: Api, change: dict[str, Any], field: str
) -> None:
    payload = mutate(api, CREATE_STORAGE, {"input": storage_input(unique("sp")) | change})
    assert payload["storageProfile"] is None
    assert [(e["field"], e["code"]) for e in payload["errors"]] == [(field, "INVALID")]


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        ({"osFamily": "beos"}, "osFamily", "must be one of"),
        ({"sourceUrl": "ftp://mirror.example.com/debian.qcow2"}, "sourceUrl", "only http:// and https://"),
        ({"sourceUrl": "http://10.1.2.3/debian.qcow2"}, "sourceUrl", "private address"),
        ({"sourceUrl": "http://169.254.169.254/latest/meta-data/"}, "sourceUrl", "link-local"),
        ({"sourceUrl": "http://[::1]:8080/x.img"}, "sourceUrl", "loopback"),
        ({"sourceUrl": "https://user:secret@mirror.example.com/x.img"}, "sourceUrl", "user name or password"),
        ({"sourceUrl": "not a url"}, "sourceUrl", ""),
        ({"checksum": "md5:0123456789abcdef0123456789abcdef"}, "checksum", "sha256 or sha512"),
        ({"checksum": "sha256:abc"}, "checksum", "64 hexadecimal digits"),
        ({"checksum": "sha512:" + "zz" * 64}, "checksum", ""),
        ({"defaultUser": "bad user"}, "defaultUser", "login name"),
        ({"minDiskGb": 0}, "minDiskGb", "between 1 and"),
    ],
)
def test_each_bad_image_value_is_a_payload_error_naming_its_field(
    api: Api, change: dict[str, Any], field: str, words: str
) -> None:
    payload = mutate(api, CREATE_IMAGE, {"input": image_input(unique("img")) | change})
    assert payload["image"] is None
    assert [(e["field"], e["code"]) for e in payload["errors"]] == [(field, "INVALID")]
    assert words in payload["errors"][0]["message"]


@pytest.mark.parametrize(
    ("document", "variables", "field"),
    [
        (CREATE_ZONE, {"input": {"id": "Zone_A"}}, "id"),
        (CREATE_ZONE, {"input": {"id": "zone-x", "name": "y" * 300}}, "name"),
        (CREATE_HOST, {"input": {"zone": "atlantis", "host": "pve1", "endpoint": "10.0.0.1:7443"}}, "zone"),
        (CREATE_HOST, {"input": {"zone": "zone-a", "host": "PVE 9", "endpoint": "10.0.0.1:7443"}}, "host"),
        (CREATE_HOST, {"input": {"zone": "zone-a", "host": "pve9", "endpoint": "10.0.0.1"}}, "endpoint"),
        (CREATE_HOST, {"input": {"zone": "zone-a", "host": "pve9", "endpoint": "h:99999"}}, "endpoint"),
        (
            CREATE_HOST,
            {"input": {"zone": "zone-a", "host": "pve9", "endpoint": "h:7443", "memoryOvercommit": 0}},
            "memoryOvercommit",
        ),
        (
            CREATE_HOST,
            {"input": {"zone": "zone-a", "host": "pve9", "endpoint": "h:7443", "cpuOvercommit": 100}},
            "cpuOvercommit",
        ),
    ],
)
def test_each_bad_zone_or_host_value_is_a_payload_error_naming_its_field(
    api: Api, document: str, variables: dict[str, Any], field: str
) -> None:
    payload = mutate(api, document, variables)
    assert [(e["field"], e["code"]) for e in payload["errors"]] == [(field, "INVALID")]


def test_a_duplicate_is_a_conflict_and_a_missing_object_not_found(api: Api) -> None:
    duplicate = mutate(api, CREATE_PROFILE, {"input": profile_input("small")})
    assert [(e["field"], e["code"]) for e in duplicate["errors"]] == [(None, "CONFLICT")]
    assert "compute profile 'small' already exists" in duplicate["errors"][0]["message"]
    missing = mutate(api, UPDATE_PROFILE, {"name": "no-such-profile", "input": {"vcpus": 2}})
    assert [e["code"] for e in missing["errors"]] == ["NOT_FOUND"]


def test_a_user_creating_a_profile_is_forbidden_at_the_top_level(api: Api, kube: KubeApi) -> None:
    name = unique("cp")
    answer = api(CREATE_PROFILE, user="alice", variables={"input": profile_input(name)})
    assert answer.codes == ["FORBIDDEN"]
    assert answer.data == {"createComputeProfile": None}
    assert stored_spec(kube, "compute-profile", name) is None


@pytest.mark.parametrize(
    ("document", "variables"),
    [
        (DELETE_PROFILE, {"name": "small"}),
        (CREATE_ZONE, {"input": {"id": "sneaky"}}),
        (UPDATE_HOST, {"zone": "zone-a", "host": "pve1", "input": {"cordoned": True}}),
        (DELETE_IMAGE, {"name": "debian-12"}),
    ],
)
def test_every_catalog_write_needs_admin(api: Api, document: str, variables: dict[str, Any]) -> None:
    answer = api(document, user="bob", variables=variables)
    assert answer.codes == ["FORBIDDEN"]
    (payload,) = answer.data.values()
    assert payload is None


# ------------------------------------------------------------------- a dotted catalog name, end to end


def test_a_vm_is_created_from_an_image_with_a_dotted_name(
    api: Api, light: LightWorld, vm_name: Callable[[str], str]
) -> None:
    # The devstack offers ubuntu-24.04 to VDC demo; the agent makes its template and the VM is tagged
    # with the name as it is.
    created = vmkit.ok(vmkit.create(api, "alice", "demo", name=vm_name("dotted"), image="ubuntu-24.04"))
    vm = created["virtualMachine"]
    assert vm["image"] == "ubuntu-24.04"
    tags = vmkit.present(light, vm["id"])["config"]["tags"].split(";")
    assert "fp-img-ubuntu-24.04" in tags
    templates = [
        guest
        for guest in vmkit.fake_vms(light, vm["zone"]).values()
        if guest["template"] and guest["name"] == "fp-tpl-ubuntu-24.04"
    ]
    assert templates, "the agent made no template named after the dotted image"


# ----------------------------------------------------------------- offerings and the VDCs that allow them

ALLOWED = {"computeProfiles": "compute-profile", "storageProfiles": "storage-profile", "images": "image"}


@pytest.mark.parametrize(
    ("create", "delete", "made", "field", "values"),
    [
        (CREATE_PROFILE, "deleteComputeProfile", "computeProfile", "computeProfiles", profile_input),
        (CREATE_STORAGE, "deleteStorageProfile", "storageProfile", "storageProfiles", storage_input),
        (CREATE_IMAGE, "deleteImage", "image", "images", image_input),
    ],
)
def test_an_offering_is_allowed_in_vdcs_as_it_is_created_and_leaves_them_when_deleted(
    api: Api,
    light: LightWorld,
    kube: KubeApi,
    create: str,
    delete: str,
    made: str,
    field: str,
    values: Any,
) -> None:
    name = unique("offer")
    kind = ALLOWED[field]
    document = f"""mutation($name: String!) {{ {delete}(name: $name) {{
      {made} {{ name }} removedFromVdcs errors {{ field message code }} }} }}"""
    with vmkit.scratch_vdcs(api, light) as scratch:
        first, second, untouched = scratch(), scratch(), scratch()
        created = mutate(api, create, {"input": values(name, allowInVdcs=[first, second])})
        assert created["errors"] == []
        for vdc in (first, second):
            assert name in stored_spec(kube, "vdc", vdc)[field]  # type: ignore[index]
        assert name not in stored_spec(kube, "vdc", untouched)[field]  # type: ignore[index]

        deleted = mutate(api, document, {"name": name})
        assert deleted == {made: {"name": name}, "removedFromVdcs": sorted([first, second]), "errors": []}
        assert stored_spec(kube, kind, name) is None
        for vdc in (first, second, untouched):
            assert name not in stored_spec(kube, "vdc", vdc)[field]  # type: ignore[index]


def test_an_unknown_vdc_to_allow_a_new_profile_in_is_an_error_and_nothing_is_stored(
    api: Api, kube: KubeApi
) -> None:
    name = unique("cp")
    answer = mutate(api, CREATE_PROFILE, {"input": profile_input(name, allowInVdcs=["no-such-vdc"])})
    assert answer["computeProfile"] is None
    assert answer["errors"] == [
        {"field": "allowInVdcs", "message": "there is no VDC 'no-such-vdc'", "code": "INVALID"}
    ]
    assert stored_spec(kube, "compute-profile", name) is None
