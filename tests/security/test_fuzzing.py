"""Fuzzing (hypothesis): the create and resize inputs of VMs, and the catalog's create mutations, over
GraphQL against the running orchestrator.

Every input ends in success or a typed error: GraphQL's own refusal of a value (400), a coded
top-level error, or payload errors of the mutation's enum; never a 500 and never an error without a
code (an exception nothing caught). What reaches the fake Proxmox is inspected: a refused input
reaches it with no write at all, and every write that does reach it carries only checked values
(a DNS label as name, a catalog profile's size, a disk within its profile, well-formed tags).
VMs are made in a scratch VDC by one of its members, so nothing else can be touched.
"""

from __future__ import annotations

import re
import urllib.parse
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from devstack import seed
from devstack.world import World
from tests.apikit import Answer, GraphQL
from tests.promises import RecordFigure
from tests.security.conftest import Issuer, ProxmoxCalls
from tests.vmkit import CREATE, DEBIAN, MEDIUM, RESIZE, SMALL, SSH_KEY, STANDARD, scratch_vdcs

pytestmark = pytest.mark.promise("fuzzing")

SUITE = "fuzzing"
FUZZ = settings(
    max_examples=20,
    deadline=None,
    database=None,  # no example database written into the work tree
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
INT32 = st.integers(min_value=-(2**31), max_value=2**31 - 1)
# What a domain error may be coded as at the top level (orchestrator/errors.py).
DOMAIN_CODES = {"UNAUTHENTICATED", "FORBIDDEN", "NOT_FOUND", "INVALID", "QUOTA_EXCEEDED", "CONFLICT"} | {
    "UNAVAILABLE",
    "UPSTREAM_FAILURE",
}
PAYLOAD_CODES = {"INVALID", "NOT_FOUND", "CONFLICT", "UNAVAILABLE", "UPSTREAM_FAILURE"}
VM_CODES = PAYLOAD_CODES | {"QUOTA_EXCEEDED", "NO_CAPACITY"}
PROFILES = {p["name"]: p for p in seed.COMPUTE_PROFILES}
DNS_LABEL = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")
TAG = re.compile(r"[a-z0-9_][a-z0-9_\-+.]*", re.IGNORECASE)


def sized(low: int, high: int) -> st.SearchStrategy[int]:
    """Integers, half of them in the range a field accepts."""
    return st.one_of(st.integers(min_value=low, max_value=high), INT32)


def label(prefix: str) -> st.SearchStrategy[str]:
    """Valid DNS labels that no seeded object has."""
    return st.from_regex(r"[a-z0-9]{1,8}(-[a-z0-9]{1,8})?", fullmatch=True).map(lambda s: f"{prefix}-{s}")


def some(*values: Any) -> st.SearchStrategy[Any]:
    return st.sampled_from(values)


def outcome(answer: Answer, field: str, codes: set[str]) -> str:
    """How a mutation ended: "ok", or the code of its typed error; fails on anything untyped."""
    assert answer.status in (200, 400), (answer.status, answer.body)
    if answer.status == 400:  # GraphQL refused a value (type, range) before running anything
        assert answer.data is None, answer.body
        assert answer.errors, answer.body
        return "GRAPHQL"
    for error in answer.errors:
        assert error.get("extensions", {}).get("code") in DOMAIN_CODES, f"an untyped error: {error}"
    if answer.errors:
        return answer.errors[0]["extensions"]["code"]
    payload = answer.data[field]
    for error in payload["errors"]:
        assert error["code"] in codes, f"an error of no known code: {error}"
    return payload["errors"][0]["code"] if payload["errors"] else "ok"


def unchecked(zone: str, method: str, path: str, body: bytes) -> str | None:
    """Why a write to Proxmox carries a value that was not checked first, or None when it is sound."""
    form = dict(urllib.parse.parse_qsl(body.decode("utf-8", "replace")))
    if path.endswith("/clone") and not DNS_LABEL.fullmatch(form.get("name", "")):
        return f"a clone named {form.get('name')!r}"
    if path.endswith("/config") and method in ("POST", "PUT"):
        if "cores" in form and (form["cores"], form.get("memory")) not in {
            (str(p["vcpus"]), str(p["memoryMib"])) for p in PROFILES.values()
        }:
            return f"a size that is no profile's: {form['cores']} cores, {form.get('memory')} MiB"
        for tag in filter(None, form.get("tags", "").split(";")):
            if not TAG.fullmatch(tag):
                return f"a malformed tag {tag!r}"
    if path.endswith("/resize"):
        size = re.fullmatch(r"\+?(\d+)G", form.get("size", ""))
        if size is None or not 1 <= int(size.group(1)) <= 65536:
            return f"a disk size {form.get('size')!r}"
    return None


@pytest.fixture(scope="module")
def tally(record_figure: RecordFigure) -> Iterator[Counter[str]]:
    """Outcomes of every example, for the summary."""
    outcomes: Counter[str] = Counter()
    yield outcomes
    for name, count in sorted(outcomes.items()):
        record_figure(SUITE, name, count)


@pytest.fixture(scope="module")
def member(api: GraphQL, world: World, issuer: Issuer) -> Iterator[dict[str, str]]:
    """A scratch VDC and the headers of a USER who is a member of it (and of nothing else)."""
    with scratch_vdcs(api, world) as make:
        vdc = make(vcpus=16, memoryMib=32768, diskGb=400, vms=10)
        token = issuer.token("USER", f"vdc:{vdc}", sub=f"fuzz-{uuid.uuid4().hex[:8]}")
        yield {"Authorization": f"Bearer {token}", "FlexPlane-VDC-ID": vdc}


def delete_vm(api: GraphQL, ident: str) -> None:
    api(
        "mutation($id: ID!) { deleteVirtualMachine(id: $id) { errors { message } } }",
        user="admin",
        variables={"id": ident},
    )


# ------------------------------------------------------------------------------------ create

create_inputs = st.fixed_dictionaries(
    {
        "name": st.one_of(label("fz"), st.text(max_size=70)),
        "computeProfile": st.one_of(some(SMALL, MEDIUM, "large", "", "SMALL"), st.text(max_size=20)),
        "storageProfile": st.one_of(some(STANDARD, "fast", ""), st.text(max_size=20)),
        "image": st.one_of(some(DEBIAN, "ubuntu-24.04", "../debian-12"), st.text(max_size=20)),
    },
    optional={
        "diskGb": st.one_of(st.integers(min_value=-5, max_value=300), INT32),
        "zone": st.one_of(some("zone-a", "zone-b", "zone-c", "ZONE-A"), st.text(max_size=10)),
        "sshKeys": st.lists(st.one_of(st.just(SSH_KEY), st.text(max_size=120)), max_size=3),
        "userData": st.one_of(some("#cloud-config\nruncmd: [reboot]\n", "#!/bin/sh\necho hi\n"), st.text()),
        "idempotencyKey": st.text(max_size=300),
    },
)


@FUZZ
@given(values=create_inputs)
def test_a_create_ends_in_a_vm_or_a_typed_error_and_proxmox_sees_only_checked_values(
    api: GraphQL,
    member: dict[str, str],
    proxmox_calls: ProxmoxCalls,
    tally: Counter[str],
    values: dict[str, Any],
) -> None:
    proxmox_calls.mark()

    answer = api.raw(CREATE, headers=member, variables={"input": values}, timeout=120)

    ended = outcome(answer, "createVirtualMachine", VM_CODES)
    tally[f"createVirtualMachine: {ended}"] += 1
    writes = proxmox_calls.writes_since_mark()
    assert [reason for call in writes if (reason := unchecked(*call))] == []
    if ended in ("GRAPHQL", "INVALID"):
        assert writes == [], "a refused input reached Proxmox"
    if ended == "ok":
        vm = answer.data["createVirtualMachine"]["virtualMachine"]
        assert vm["name"] == values["name"]
        assert (vm["cores"], vm["memoryMb"]) == (
            PROFILES[values["computeProfile"]]["vcpus"],
            PROFILES[values["computeProfile"]]["memoryMib"],
        )
        delete_vm(api, vm["id"])


# ------------------------------------------------------------------------------------ resize


@pytest.fixture(scope="module")
def victim(api: GraphQL, member: dict[str, str]) -> str:
    """The scratch VDC's VM that the resize fuzzing works on (stopped, so profiles may change)."""
    values = {"name": f"fz-{uuid.uuid4().hex[:8]}", "computeProfile": SMALL, "storageProfile": STANDARD}
    answer = api.raw(CREATE, headers=member, variables={"input": {**values, "image": DEBIAN}}, timeout=120)
    created = answer.data["createVirtualMachine"]
    assert created["errors"] == [], created["errors"]
    ident: str = created["virtualMachine"]["id"]
    stop = "mutation($id: ID!) { stopVirtualMachine(id: $id) { errors { message } } }"
    assert api.raw(stop, headers=member, variables={"id": ident}).data["stopVirtualMachine"]["errors"] == []
    return ident


@FUZZ
@given(
    target=st.one_of(
        st.just("victim"), some("zone-a/100", "zone-b/101", "zone-a/0", "zone-x/1"), st.text(max_size=20)
    ),
    change=st.fixed_dictionaries(
        {},
        optional={
            "computeProfile": st.one_of(some(SMALL, MEDIUM, "large", ""), st.text(max_size=20)),
            "diskGb": st.one_of(st.integers(min_value=-5, max_value=200), INT32),
        },
    ),
)
def test_a_resize_ends_in_a_change_or_a_typed_error_and_proxmox_sees_only_checked_values(
    api: GraphQL,
    member: dict[str, str],
    victim: str,
    proxmox_calls: ProxmoxCalls,
    tally: Counter[str],
    target: str,
    change: dict[str, Any],
) -> None:
    """Other VDCs' VMs (zone-a/100 is demo's) are reported as missing to this member, and stay as they are."""
    proxmox_calls.mark()
    ident = victim if target == "victim" else target

    answer = api.raw(RESIZE, headers=member, variables={"input": {"id": ident, **change}})

    ended = outcome(answer, "resizeVirtualMachine", VM_CODES)
    tally[f"resizeVirtualMachine: {ended}"] += 1
    writes = proxmox_calls.writes_since_mark()
    assert [reason for call in writes if (reason := unchecked(*call))] == []
    if ended != "ok" or ident != victim:
        assert writes == [], "a refused resize reached Proxmox"
    else:
        vm = answer.data["resizeVirtualMachine"]["virtualMachine"]
        if change.get("computeProfile"):
            assert vm["computeProfile"] == change["computeProfile"]
        if change.get("diskGb") is not None:
            assert vm["diskGb"] >= change["diskGb"]


# ----------------------------------------------------------------------------------- catalog

# mutation -> (its input type, the object its payload carries)
CATALOG = {
    "createComputeProfile": ("ComputeProfileInput", "computeProfile"),
    "createStorageProfile": ("StorageProfileInput", "storageProfile"),
    "createImage": ("ImageInput", "image"),
}


def catalog_documents(field: str) -> tuple[str, str]:
    """The create mutation's document, and the document deleting what it made (by name)."""
    input_type, created = CATALOG[field]
    create = f"""mutation($input: {input_type}!) {{
      {field}(input: $input) {{ {created} {{ name }} errors {{ field message code }} }} }}"""
    delete = "delete" + field.removeprefix("create")
    return create, f"mutation($n: String!) {{ {delete}(name: $n) {{ errors {{ message }} }} }}"


names = st.one_of(
    label("fz"), some("small", "standard", "debian-12", "Upper", "a/b", ""), st.text(max_size=70)
)

catalog_inputs = st.one_of(
    st.tuples(
        st.just("createComputeProfile"),
        st.fixed_dictionaries(
            {"name": names, "vcpus": sized(1, 16), "memoryMib": sized(128, 8192)},
            optional={
                "cpuType": st.one_of(some("host", "x86-64-v2-AES"), st.text(max_size=40)),
                "description": st.text(),
            },
        ),
    ),
    st.tuples(
        st.just("createStorageProfile"),
        st.fixed_dictionaries(
            {
                "name": names,
                "storages": st.lists(
                    st.fixed_dictionaries(
                        {
                            "zone": st.one_of(some("zone-a", "zone-b"), st.text(max_size=10)),
                            "storage": st.one_of(some("local-lvm", "ceph-rbd"), st.text(max_size=20)),
                        }
                    ),
                    max_size=3,
                ),
                "defaultGb": sized(1, 100),
                "minGb": sized(1, 20),
                "maxGb": sized(50, 2000),
            },
            optional={
                "bus": st.one_of(some("scsi", "virtio", "sata", "ide"), st.text(max_size=8)),
                "format": st.one_of(some("raw", "qcow2", "vmdk"), st.text(max_size=8)),
                "readMbps": INT32,
                "writeIops": INT32,
            },
        ),
    ),
    st.tuples(
        st.just("createImage"),
        st.fixed_dictionaries(
            {
                "name": names,
                "osFamily": st.one_of(some("debian", "windows", "plan9"), st.text(max_size=10)),
                "sourceUrl": st.one_of(
                    some(
                        "https://cloud.debian.org/images/x.qcow2", "http://10.0.0.1/x", "file:///etc/shadow"
                    ),
                    st.text(max_size=60),
                ),
                "checksum": st.one_of(st.just("sha256:" + "ab" * 32), st.text(max_size=80)),
                "defaultUser": st.one_of(some("debian", "root", ""), st.text(max_size=40)),
                "minDiskGb": sized(1, 20),
            },
        ),
    ),
)


@FUZZ
@given(mutation=catalog_inputs)
def test_a_catalog_create_ends_in_an_entry_or_a_typed_error_and_never_calls_proxmox(
    api: GraphQL, proxmox_calls: ProxmoxCalls, tally: Counter[str], mutation: tuple[str, dict[str, Any]]
) -> None:
    field, values = mutation
    create, delete = catalog_documents(field)
    proxmox_calls.mark()

    answer = api(create, user="admin", variables={"input": values})

    ended = outcome(answer, field, PAYLOAD_CODES)
    tally[f"{field}: {ended}"] += 1
    assert proxmox_calls.since_mark() == []
    if ended == "ok":
        name = answer.data[field][CATALOG[field][1]]["name"]
        assert name == values["name"]
        api(delete, user="admin", variables={"n": name})
