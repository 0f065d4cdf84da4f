"""The agents' release channel over HTTPS, and the admin's pin through the API (stored as a ConfigMap)."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from agent.release import BuiltRelease
from devstack import seed
from devstack.pki import CertificateAuthority
from tests.releasekit import PIN_CONFIG_MAP as PIN
from tests.releasekit import Keys, ReleasePlatform, build_release

PIN_VERSION = """mutation($version: String!) {
  pinAgentVersion(version: $version) { pin { version pinnedBy pinnedAt } errors { field message code } } }"""
UNPIN = "mutation { unpinAgentVersion { pin { version } errors { field message code } } }"
CHANNEL = "{ agentReleaseChannel { versions servedVersion pin { version pinnedBy } } }"


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReleasePlatform]:
    scratch = tmp_path_factory.mktemp("releases-platform")
    ca = CertificateAuthority.create(scratch / "ca")
    with ReleasePlatform(scratch, ca) as running:
        yield running


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, BuiltRelease]:
    directory = tmp_path_factory.mktemp("built")
    key = Keys.create(directory / "keys").signing()
    return {v: build_release(v, key, directory) for v in ("1.0.0", "1.2.0", "1.10.0")}


@pytest.fixture(scope="module")
def core(platform: ReleasePlatform) -> client.CoreV1Api:
    return platform.core()


@pytest.fixture
def channel(platform: ReleasePlatform, built: dict[str, BuiltRelease]) -> ReleasePlatform:
    """The platform publishing 1.0.0, 1.2.0 and 1.10.0, with no pin."""
    platform.publish(*built.values())
    platform.remove_pin()
    return platform


def served(platform: ReleasePlatform) -> dict[str, Any]:
    response = platform.get("/agent/releases/channel.json")
    assert response.status_code == 200, response.text
    assert response.headers["Cache-Control"] == "no-store"
    body: dict[str, Any] = response.json()
    return body


def manifest_of(envelope: dict[str, Any]) -> dict[str, Any]:
    manifest: dict[str, Any] = json.loads(base64.b64decode(envelope["manifest"]))
    return manifest


def payload(answer: dict[str, Any]) -> dict[str, Any]:
    assert "errors" not in answer, answer
    (value,) = answer["data"].values()
    assert isinstance(value, dict)
    return value


# ----------------------------------------------------------------------------------- the channel


def test_the_channel_serves_the_highest_version_as_its_signed_manifest(
    channel: ReleasePlatform, built: dict[str, BuiltRelease]
) -> None:
    body = served(channel)
    assert body["version"] == "1.10.0"  # by version order, not by name
    assert body["pinned"] is False
    assert body["release"] == json.loads(built["1.10.0"].envelope.read_bytes())
    assert manifest_of(body["release"])["url"] == "flexplane-agent-1.10.0.pyz"


def test_the_artifact_is_served_beside_the_channel_byte_for_byte(
    channel: ReleasePlatform, built: dict[str, BuiltRelease]
) -> None:
    response = channel.get("/agent/releases/flexplane-agent-1.10.0.pyz")
    assert response.status_code == 200
    assert response.content == built["1.10.0"].artifact.read_bytes()
    assert int(response.headers["Content-Length"]) == built["1.10.0"].manifest.size


@pytest.mark.parametrize(
    "name", ["flexplane-agent-9.9.9.pyz", "..%2Fkubeconfig", "kubeconfig", "flexplane-agent-1.0.0.pyz.bak"]
)
def test_only_published_release_files_are_served(channel: ReleasePlatform, name: str) -> None:
    (channel.releases / "flexplane-agent-1.0.0.pyz.bak").write_bytes(b"left over")
    response = channel.get(f"/agent/releases/{name}")
    assert response.status_code == 404
    assert b"left over" not in response.content
    assert b"clusters" not in response.content  # the kubeconfig beside the folder


def test_an_empty_channel_answers_404_with_a_reason(channel: ReleasePlatform) -> None:
    channel.publish()
    response = channel.get("/agent/releases/channel.json")
    assert response.status_code == 404
    assert response.json()["error"]["message"] == "agent release 'latest' does not exist"


def test_an_unreadable_manifest_is_skipped(channel: ReleasePlatform) -> None:
    (channel.releases / "flexplane-agent-7.0.0.release.json").write_text("{not json")
    assert served(channel)["version"] == "1.10.0"


# --------------------------------------------------------------------------------------- the pin


def test_an_admin_pins_an_older_version_and_the_channel_serves_it_as_pinned(
    channel: ReleasePlatform, core: client.CoreV1Api
) -> None:
    pin = payload(channel.graphql(PIN_VERSION, user="admin", variables={"version": "1.2.0"}))
    assert pin["errors"] == []
    assert pin["pin"]["version"] == "1.2.0"
    assert pin["pin"]["pinnedBy"]
    body = served(channel)
    assert (body["version"], body["pinned"]) == ("1.2.0", True)
    stored = core.read_namespaced_config_map(PIN, seed.NAMESPACE)
    assert stored.metadata is not None
    assert stored.data is not None
    assert (stored.metadata.labels or {})["flexplane.io/kind"] == "agent-release"
    assert json.loads(stored.data["spec"])["version"] == "1.2.0"

    again = payload(channel.graphql(PIN_VERSION, user="admin", variables={"version": "1.0.0"}))
    assert again["pin"]["version"] == "1.0.0"
    assert served(channel)["version"] == "1.0.0"

    channel_state = payload(channel.graphql(CHANNEL, user="admin"))
    assert channel_state["versions"] == ["1.0.0", "1.2.0", "1.10.0"]
    assert channel_state["servedVersion"] == "1.0.0"
    assert channel_state["pin"]["version"] == "1.0.0"


def test_unpinning_serves_the_highest_version_again(channel: ReleasePlatform) -> None:
    payload(channel.graphql(PIN_VERSION, user="admin", variables={"version": "1.2.0"}))
    removed = payload(channel.graphql(UNPIN, user="admin"))
    assert removed == {"pin": {"version": "1.2.0"}, "errors": []}
    assert served(channel)["pinned"] is False
    assert payload(channel.graphql(UNPIN, user="admin")) == {"pin": None, "errors": []}


@pytest.mark.parametrize(
    ("version", "message"),
    [
        ("1.5.0", "version 1.5.0 is not published in the release channel (published: 1.0.0, 1.2.0, 1.10.0)"),
        ("latest", "'latest' is not a release version (e.g. 1.4.0)"),
        ("1.02.0", "'1.02.0' is not a release version (e.g. 1.4.0)"),
    ],
)
def test_pinning_a_version_that_is_not_published_is_refused_naming_the_field(
    channel: ReleasePlatform, version: str, message: str
) -> None:
    answer = payload(channel.graphql(PIN_VERSION, user="admin", variables={"version": version}))
    assert answer == {"pin": None, "errors": [{"field": "version", "message": message, "code": "INVALID"}]}
    assert served(channel)["pinned"] is False


def test_the_channel_says_so_when_the_pinned_version_is_gone(
    channel: ReleasePlatform, built: dict[str, BuiltRelease]
) -> None:
    payload(channel.graphql(PIN_VERSION, user="admin", variables={"version": "1.2.0"}))
    channel.publish(built["1.0.0"], built["1.10.0"])
    response = channel.get("/agent/releases/channel.json")
    assert response.status_code == 404
    assert response.json()["error"]["message"] == "pinned agent release '1.2.0' does not exist"
    state = payload(channel.graphql(CHANNEL, user="admin"))
    assert (state["servedVersion"], state["pin"]["version"]) == (None, "1.2.0")


@pytest.mark.parametrize("document", [PIN_VERSION, UNPIN, CHANNEL])
def test_only_an_admin_may_see_or_change_the_pin(channel: ReleasePlatform, document: str) -> None:
    answer = channel.graphql(document, user="alice", variables={"version": "1.2.0"})
    assert [e["extensions"]["code"] for e in answer["errors"]] == ["FORBIDDEN"]
    assert served(channel)["pinned"] is False
