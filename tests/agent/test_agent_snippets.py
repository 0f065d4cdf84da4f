"""Cloud-init snippets: WriteSnippet and DeleteSnippet end to end, through a real agent over mTLS.

What the agent did is checked in its snippets folder itself; the client's own checks are bypassed
(with the raw stub) where the test is that the agent refuses.
"""

from __future__ import annotations

import stat
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pytest

from agentclient import AgentPool, AgentTarget, SnippetFailed, SnippetRefused
from agentclient.errors import ERROR_METADATA_KEY, SNIPPET_REFUSED, translate_error
from agentclient.proto.flexplane.agent.v1 import agent_pb2, agent_pb2_grpc
from tests.agent.conftest import AgentProcess

TIMEOUT = 10.0
CONTENT = b"#cloud-config\npackages: [nginx]\n"


@pytest.fixture(scope="module")
def snippets_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("node") / "snippets"


@pytest.fixture(scope="module")
def snippet_agent(launch: Callable[..., AgentProcess], snippets_dir: Path) -> Iterator[AgentProcess]:
    process = launch(snippets_dir=str(snippets_dir), snippets_storage="local")
    yield process
    process.stop()


@pytest.fixture
def target(snippet_agent: AgentProcess) -> AgentTarget:
    return snippet_agent.target()


@pytest.fixture
def stub(pool: AgentPool, target: AgentTarget) -> agent_pb2_grpc.SnippetsStub:
    """The raw Snippets stub on the pool's channel: it sends what the client itself would refuse."""
    return agent_pb2_grpc.SnippetsStub(pool.channel(target))


def test_a_snippet_is_written_with_mode_0640_and_named_by_its_volume_id(
    pool: AgentPool, target: AgentTarget, snippets_dir: Path
) -> None:
    volume = pool.write_snippet(target, "fp-demo-101-vendor.yaml", CONTENT, timeout=TIMEOUT)

    assert volume == "local:snippets/fp-demo-101-vendor.yaml"
    path = snippets_dir / "fp-demo-101-vendor.yaml"
    assert path.read_bytes() == CONTENT
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert sorted(p.name for p in snippets_dir.iterdir()) == ["fp-demo-101-vendor.yaml"]  # no temporary left


def test_writing_again_replaces_the_snippet(pool: AgentPool, target: AgentTarget, snippets_dir: Path) -> None:
    pool.write_snippet(target, "fp-demo-102-vendor.yaml", b"#cloud-config\n{}\n", timeout=TIMEOUT)
    pool.write_snippet(target, "fp-demo-102-vendor.yaml", CONTENT, timeout=TIMEOUT)

    assert (snippets_dir / "fp-demo-102-vendor.yaml").read_bytes() == CONTENT


def test_a_snippet_is_deleted_and_deleting_a_missing_one_is_no_error(
    pool: AgentPool, target: AgentTarget, snippets_dir: Path
) -> None:
    pool.write_snippet(target, "fp-demo-103-vendor.yaml", CONTENT, timeout=TIMEOUT)

    pool.delete_snippet(target, "fp-demo-103-vendor.yaml", timeout=TIMEOUT)
    assert not (snippets_dir / "fp-demo-103-vendor.yaml").exists()
    pool.delete_snippet(target, "fp-demo-103-vendor.yaml", timeout=TIMEOUT)


@pytest.mark.parametrize(
    "name",
    [
        "../x.yaml",
        "fp-x.sh",
        "fp-../../etc/cron.d/x.yaml",
        "fp-X.yaml",
        "fp-.yaml",
        "x.yaml",
        "fp-a/b.yaml",
        "",
    ],
)
def test_the_agent_refuses_a_name_outside_its_rule_and_writes_nothing(
    stub: agent_pb2_grpc.SnippetsStub, snippets_dir: Path, name: str
) -> None:
    before = set(snippets_dir.parent.rglob("*"))
    with pytest.raises(grpc.RpcError) as raised:
        stub.WriteSnippet(agent_pb2.WriteSnippetRequest(name=name, content=CONTENT), timeout=TIMEOUT)
    error = raised.value
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert (ERROR_METADATA_KEY, SNIPPET_REFUSED) in tuple(error.trailing_metadata())
    with pytest.raises(grpc.RpcError):
        stub.DeleteSnippet(agent_pb2.DeleteSnippetRequest(name=name), timeout=TIMEOUT)
    assert set(snippets_dir.parent.rglob("*")) == before


def test_the_agent_refuses_a_snippet_over_64_kib(
    stub: agent_pb2_grpc.SnippetsStub, snippets_dir: Path
) -> None:
    content = b"#cloud-config\n" + b"x" * (64 * 1024)
    with pytest.raises(grpc.RpcError) as raised:
        stub.WriteSnippet(
            agent_pb2.WriteSnippetRequest(name="fp-demo-104-vendor.yaml", content=content), timeout=TIMEOUT
        )
    assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert not (snippets_dir / "fp-demo-104-vendor.yaml").exists()


def test_the_client_checks_the_name_and_size_before_calling(pool: AgentPool, target: AgentTarget) -> None:
    with pytest.raises(ValueError, match="not fp-"):
        pool.write_snippet(target, "../x.yaml", CONTENT, timeout=TIMEOUT)
    with pytest.raises(ValueError, match="at most 65536"):
        pool.write_snippet(target, "fp-x.yaml", b"x" * (64 * 1024 + 1), timeout=TIMEOUT)


def test_a_snippets_folder_that_cannot_be_written_is_a_typed_failure(
    launch: Callable[..., AgentProcess], pool: AgentPool, tmp_path: Path
) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the snippets folder should be")
    process = launch(snippets_dir=str(blocker / "snippets"))
    try:
        with pytest.raises(SnippetFailed, match="cannot write"):
            pool.write_snippet(process.target(), "fp-demo-105-vendor.yaml", CONTENT, timeout=TIMEOUT)
    finally:
        process.stop()


def test_the_agents_refusal_is_a_snippet_refused_for_the_client(
    stub: agent_pb2_grpc.SnippetsStub, target: AgentTarget
) -> None:
    # The client refuses such a name itself, so the agent's answer is translated from a raw call.
    with pytest.raises(grpc.RpcError) as raised:
        stub.DeleteSnippet(agent_pb2.DeleteSnippetRequest(name="fp-x.sh"), timeout=TIMEOUT)
    error = translate_error(raised.value, target, TIMEOUT, snippet="fp-x.sh")  # type: ignore[arg-type]
    assert isinstance(error, SnippetRefused)
    assert "refused snippet fp-x.sh" in str(error)
