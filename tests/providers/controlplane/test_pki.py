"""The hosted control plane's PKI: chains, names, usages, validity, the CA hash, kubeconfigs, keeping it."""

from __future__ import annotations

import datetime
import hashlib
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from cryptography.x509.verification import PolicyBuilder, Store
from kubernetes import client, config

from providers.controlplane import pki

NAMES = pki.Names(
    cluster="web", namespace="fpcp-demo-web", endpoint_host="10.20.0.7", service_cidr="10.96.0.0/12"
)
SERVING_ISSUERS = {
    "apiserver": "ca",
    "konnectivity-server": "ca",
    "etcd-server": "etcd-ca",
    "etcd-peer": "etcd-ca",
}
CLIENT_ISSUERS = {
    "apiserver-kubelet-client": "ca",
    "apiserver-etcd-client": "etcd-ca",
    "front-proxy-client": "front-proxy-ca",
    "konnectivity-client": "ca",
    "admin": "ca",
    "controller-manager": "ca",
    "scheduler": "ca",
    "cloud-controller": "ca",
    "metrics-scraper": "ca",
}


@pytest.fixture(scope="module")
def files() -> dict[str, bytes]:
    return pki.ensure_pki({}, NAMES)


def cert(files: dict[str, bytes], base: str) -> x509.Certificate:
    return x509.load_pem_x509_certificate(files[f"{base}.crt"])


def subject(certificate: x509.Certificate) -> tuple[str, list[str]]:
    cn = certificate.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value
    orgs = [attr.value for attr in certificate.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)]
    return str(cn), [str(org) for org in orgs]


def verify_time(certificate: x509.Certificate) -> datetime.datetime:
    return certificate.not_valid_before_utc + datetime.timedelta(hours=1)


@pytest.mark.parametrize(("leaf", "issuer"), sorted(SERVING_ISSUERS.items()))
def test_every_serving_certificate_chains_to_its_ca_for_the_names_it_must_serve(
    files: dict[str, bytes], leaf: str, issuer: str
) -> None:
    leaf_cert = cert(files, leaf)
    dns, _ = pki.san_names(leaf_cert)
    verifier = (
        PolicyBuilder()
        .store(Store([cert(files, issuer)]))
        .time(verify_time(leaf_cert))
        .build_server_verifier(x509.DNSName(sorted(dns)[0]))
    )
    chain = verifier.verify(leaf_cert, [])
    assert chain[-1] == cert(files, issuer)


@pytest.mark.parametrize(("leaf", "issuer"), sorted(CLIENT_ISSUERS.items()))
def test_every_client_certificate_chains_to_its_ca_for_client_authentication(
    files: dict[str, bytes], leaf: str, issuer: str, tmp_path: Path
) -> None:
    # openssl, not cryptography's verifier: that one wants a subjectAltName, which Kubernetes'
    # client certificates (an identity in the subject) do not carry.
    (tmp_path / "ca.crt").write_bytes(files[f"{issuer}.crt"])
    (tmp_path / "leaf.crt").write_bytes(files[f"{leaf}.crt"])
    result = subprocess.run(
        [
            "openssl",
            "verify",
            "-purpose",
            "sslclient",
            "-CAfile",
            str(tmp_path / "ca.crt"),
            str(tmp_path / "leaf.crt"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_api_server_serves_the_endpoint_the_in_cluster_names_the_service_ip_and_loopback(
    files: dict[str, bytes],
) -> None:
    dns, ips = pki.san_names(cert(files, "apiserver"))
    assert {
        "kubernetes",
        "kubernetes.default",
        "kubernetes.default.svc",
        "kubernetes.default.svc.cluster.local",
        "kube-apiserver.fpcp-demo-web.svc",
        "kube-apiserver.fpcp-demo-web.svc.cluster.local",
        "localhost",
    } <= dns
    assert ips == {"10.20.0.7", "10.96.0.1", "127.0.0.1"}


def test_the_first_service_ip_follows_the_clusters_service_cidr() -> None:
    files = pki.ensure_pki(
        {}, pki.Names("web", "fpcp-demo-web", "api.example.net", service_cidr="172.20.0.0/16")
    )
    dns, ips = pki.san_names(cert(files, "apiserver"))
    assert "api.example.net" in dns
    assert "172.20.0.1" in ips


def test_konnectivity_serves_the_endpoint_the_agents_dial(files: dict[str, bytes]) -> None:
    _, ips = pki.san_names(cert(files, "konnectivity-server"))
    assert "10.20.0.7" in ips


@pytest.mark.parametrize(
    ("leaf", "identity"),
    [
        ("admin", ("kubernetes-admin", ["system:masters"])),
        ("controller-manager", ("system:kube-controller-manager", [])),
        ("scheduler", ("system:kube-scheduler", [])),
        ("apiserver-kubelet-client", ("kube-apiserver-kubelet-client", [])),
        ("front-proxy-client", ("front-proxy-client", [])),
        ("konnectivity-client", ("system:konnectivity-server", [])),
        ("cloud-controller", ("flexplane:cloud-controller", [])),
        ("metrics-scraper", ("flexplane:metrics", [])),
    ],
)
def test_client_certificates_carry_kubeadms_identities(
    files: dict[str, bytes], leaf: str, identity: tuple[str, list[str]]
) -> None:
    assert subject(cert(files, leaf)) == identity


def test_cas_sign_certificates_and_nothing_else(files: dict[str, bytes]) -> None:
    for base in pki.CAS:
        ca = cert(files, base)
        assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
        usage = ca.extensions.get_extension_for_class(x509.KeyUsage).value
        assert usage.key_cert_sign
        assert usage.crl_sign
        assert ca.not_valid_after_utc - ca.not_valid_before_utc >= datetime.timedelta(days=3650)


@pytest.mark.parametrize("leaf", pki.LEAVES)
def test_leaves_are_no_cas_valid_a_year_with_the_usage_of_their_role(
    files: dict[str, bytes], leaf: str
) -> None:
    leaf_cert = cert(files, leaf)
    assert not leaf_cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    usage = leaf_cert.extensions.get_extension_for_class(x509.KeyUsage).value
    assert usage.digital_signature
    assert not usage.key_cert_sign
    eku = set(leaf_cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value)
    expected = {
        "apiserver": {ExtendedKeyUsageOID.SERVER_AUTH},
        "konnectivity-server": {ExtendedKeyUsageOID.SERVER_AUTH},
        "etcd-server": {ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH},
        "etcd-peer": {ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH},
    }.get(leaf, {ExtendedKeyUsageOID.CLIENT_AUTH})
    assert eku == expected
    validity = leaf_cert.not_valid_after_utc - leaf_cert.not_valid_before_utc
    assert datetime.timedelta(days=365) <= validity <= datetime.timedelta(days=366)


def test_the_service_account_key_pair_matches(files: dict[str, bytes]) -> None:
    private = serialization.load_pem_private_key(files["sa.key"], password=None)
    public = serialization.load_pem_public_key(files["sa.pub"])
    assert private.public_key() == public


def test_the_ca_hash_is_what_openssl_gives_for_the_public_key(files: dict[str, bytes]) -> None:
    pubkey = subprocess.run(
        ["openssl", "x509", "-pubkey", "-noout"], input=files["ca.crt"], capture_output=True, check=True
    ).stdout
    der = subprocess.run(
        ["openssl", "pkey", "-pubin", "-outform", "der"], input=pubkey, capture_output=True, check=True
    ).stdout
    assert pki.ca_cert_hash(files["ca.crt"]) == "sha256:" + hashlib.sha256(der).hexdigest()


def test_a_second_pass_keeps_every_key_and_certificate(files: dict[str, bytes]) -> None:
    assert pki.ensure_pki(files, NAMES) == files


def test_a_missing_leaf_is_reissued_from_the_kept_ca(files: dict[str, bytes]) -> None:
    partial = {name: data for name, data in files.items() if not name.startswith("scheduler.")}
    again = pki.ensure_pki(partial, NAMES)
    assert again["ca.key"] == files["ca.key"]
    assert again["scheduler.crt"] != files["scheduler.crt"]
    assert {name for name in again if again[name] != files[name]} == {"scheduler.crt", "scheduler.key"}


def test_a_new_endpoint_reissues_only_the_certificates_that_serve_it(files: dict[str, bytes]) -> None:
    moved = pki.ensure_pki(files, pki.Names("web", "fpcp-demo-web", "10.20.0.8"))
    changed = {name for name in moved if moved[name] != files[name]}
    assert changed == {"apiserver.crt", "apiserver.key", "konnectivity-server.crt", "konnectivity-server.key"}


def test_a_leaf_near_its_expiry_is_reissued_and_a_fresh_one_kept(files: dict[str, bytes]) -> None:
    expiry = cert(files, "admin").not_valid_after_utc
    assert pki.ensure_pki(files, NAMES, at=expiry - datetime.timedelta(days=90)) == files
    renewed = pki.ensure_pki(files, NAMES, at=expiry - datetime.timedelta(days=30))
    assert renewed["admin.crt"] != files["admin.crt"]
    assert renewed["ca.crt"] == files["ca.crt"]
    assert cert(renewed, "admin").not_valid_after_utc > expiry


def test_leaves_of_a_ca_made_anew_are_reissued_even_with_the_same_name(files: dict[str, bytes]) -> None:
    without_ca_key = {name: data for name, data in files.items() if not name.startswith("ca.")}
    again = pki.ensure_pki(without_ca_key, NAMES)
    assert again["ca.crt"] != files["ca.crt"]
    for leaf in ("apiserver", "admin", "konnectivity-server"):
        assert again[f"{leaf}.crt"] != files[f"{leaf}.crt"]
        cert(again, leaf).verify_directly_issued_by(cert(again, "ca"))
    assert again["front-proxy-client.crt"] == files["front-proxy-client.crt"]  # another CA's


def test_the_digest_changes_with_any_file(files: dict[str, bytes]) -> None:
    assert pki.digest(files) == pki.digest(dict(files))
    assert pki.digest({**files, "sa.pub": b"x"}) != pki.digest(files)


def load(kubeconfig: bytes) -> client.ApiClient:
    return config.new_client_from_config_dict(yaml.safe_load(kubeconfig))


@pytest.mark.parametrize("name", sorted(pki.KUBECONFIGS))
def test_every_component_kubeconfig_loads_in_the_official_client(files: dict[str, bytes], name: str) -> None:
    api_client = load(pki.kubeconfig_files(files, cluster="web")[name])
    configuration: Any = api_client.configuration
    assert configuration.host == "https://127.0.0.1:6443"
    assert configuration.verify_ssl
    assert configuration.cert_file
    assert configuration.key_file


def test_the_admin_kubeconfig_names_the_endpoint_and_the_admin(files: dict[str, bytes]) -> None:
    text = pki.admin_kubeconfig(files, cluster="web", server="https://10.20.0.7:6443")
    configuration: Any = load(text).configuration
    assert configuration.host == "https://10.20.0.7:6443"
    with open(configuration.cert_file, "rb") as handle:  # noqa: PTH123 - the client's temporary file
        assert subject(x509.load_pem_x509_certificate(handle.read())) == (
            "kubernetes-admin",
            ["system:masters"],
        )
    with open(configuration.ssl_ca_cert, "rb") as handle:  # noqa: PTH123
        assert handle.read() == files["ca.crt"]


def test_an_ipv6_endpoint_is_bracketed() -> None:
    assert pki.server_url("fd00::7", 6443) == "https://[fd00::7]:6443"
