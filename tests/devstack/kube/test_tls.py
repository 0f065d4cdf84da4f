"""Serving HTTPS: the official client trusts the server through the CA in its kubeconfig, and only so."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client, config
from kubernetes.client import ApiException

from devstack.kube import KubeServer
from devstack.pki import CertificateAuthority
from tests.devstack.kube.support import meta


@pytest.fixture(scope="module")
def authority(tmp_path_factory: pytest.TempPathFactory) -> CertificateAuthority:
    return CertificateAuthority.create(tmp_path_factory.mktemp("tls-ca"))


@pytest.fixture(scope="module")
def serving(authority: CertificateAuthority, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return authority.issue_server(["127.0.0.1"], tmp_path_factory.mktemp("tls-server"), "apiserver")


@pytest.fixture(scope="module")
def https(serving: tuple[Path, Path]) -> Iterator[KubeServer]:
    """A server given its certificate and key as PEM bytes, as read from a control plane's Secret."""
    certificate, key = serving
    with KubeServer.start(tls=(certificate.read_bytes(), key.read_bytes())) as server:
        yield server


def test_the_client_reaches_an_https_server_through_the_ca_in_its_kubeconfig(
    https: KubeServer, authority: CertificateAuthority, tmp_path: Path
) -> None:
    kubeconfig = https.write_kubeconfig(tmp_path / "kubeconfig", certificate_authority=authority.cert_pem)
    api_client = config.new_client_from_config(config_file=str(kubeconfig))

    version = client.VersionApi(api_client).get_code()
    api_client.close()

    assert https.url.startswith("https://127.0.0.1:")
    assert version.major == "1"


def test_the_client_refuses_an_https_server_it_has_no_ca_for(https: KubeServer) -> None:
    configuration = client.Configuration(host=https.url)
    configuration.retries = False
    api_client = client.ApiClient(configuration)

    with pytest.raises(ApiException, match="CERTIFICATE_VERIFY_FAILED") as raised:
        client.VersionApi(api_client).get_code()
    assert raised.value.status == 0  # no answer: the connection failed
    api_client.close()


def test_it_serves_https_with_a_certificate_and_key_given_as_paths(
    serving: tuple[Path, Path], authority: CertificateAuthority, tmp_path: Path
) -> None:
    with KubeServer.start(tls=serving) as server:
        kubeconfig = server.write_kubeconfig(
            tmp_path / "kubeconfig", certificate_authority=authority.cert_path
        )
        api_client = config.new_client_from_config(config_file=str(kubeconfig))
        namespaces = client.CoreV1Api(api_client).list_namespace().items
        api_client.close()

    assert "default" in [meta(namespace).name for namespace in namespaces]


def test_an_https_servers_kubeconfig_needs_its_ca(https: KubeServer, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="CA"):
        https.write_kubeconfig(tmp_path / "kubeconfig")
