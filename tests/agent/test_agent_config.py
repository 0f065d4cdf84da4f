"""The agent's configuration: TOML, environment overrides, and validation."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.config import DEFAULT_ALLOWED_CLIENTS, AgentConfig, ConfigError, load_config


@pytest.fixture
def files(tmp_path: Path) -> Path:
    for name in ("agent.crt", "agent.key", "ca.crt"):
        (tmp_path / name).write_text("pem\n")
    (tmp_path / "token").write_text("file-secret\n")
    return tmp_path


BASE = {
    "listen": '"127.0.10.1:7443"',
    "zone": '"zone1"',
    "node": '"pve1"',
    "tls_cert": '"agent.crt"',
    "tls_key": '"agent.key"',
    "ca": '"ca.crt"',
}


def write(directory: Path, text: str) -> Path:
    """A configuration file of BASE plus the TOML lines of text (which replace BASE's keys)."""
    given = {line.split("=")[0].strip() for line in text.splitlines() if "=" in line}
    path = directory / "agent.toml"
    path.write_text("".join(f"{k} = {v}\n" for k, v in BASE.items() if k not in given) + text)
    return path


def load(path: Path, **environ: str) -> AgentConfig:
    return load_config(path, environ=environ)


def test_it_reads_a_minimal_file_with_defaults(files: Path) -> None:
    config = load(write(files, 'proxmox_token_secret = "s"\n'))

    assert config.listen == "127.0.10.1:7443"
    assert config.identity == "pve1.zone1.agents.flexplane"
    assert config.allowed_clients == frozenset(DEFAULT_ALLOWED_CLIENTS)
    assert config.proxmox_url == "https://127.0.0.1:8006"
    assert config.proxmox_token_id == "root@pam!flexplane"
    assert config.proxmox_timeout == 10.0
    assert config.proxmox_ca is None


def test_it_reads_paths_relative_to_the_file(files: Path) -> None:
    config = load(write(files, 'proxmox_token_secret = "s"\n'))

    assert config.tls_cert == files / "agent.crt"


def test_an_environment_variable_overrides_the_file(files: Path) -> None:
    config = load(write(files, 'proxmox_token_secret = "s"\n'), FLEXPLANE_AGENT_LISTEN="127.0.10.2:7443")

    assert config.listen == "127.0.10.2:7443"


def test_allowed_clients_from_the_environment_are_comma_separated(files: Path) -> None:
    config = load(
        write(files, 'proxmox_token_secret = "s"\n'),
        FLEXPLANE_AGENT_ALLOWED_CLIENTS="flexplane-orchestrator, ops-console,extra",
    )

    assert config.allowed_clients == {"flexplane-orchestrator", "ops-console", "extra"}


def test_the_timeout_from_the_environment_is_a_number(files: Path) -> None:
    config = load(write(files, 'proxmox_token_secret = "s"\n'), FLEXPLANE_AGENT_PROXMOX_TIMEOUT="2.5")

    assert config.proxmox_timeout == 2.5


def test_it_reads_the_token_secret_from_a_file(files: Path) -> None:
    config = load(write(files, 'proxmox_token_secret_file = "token"\n'))

    assert config.proxmox_token_secret == "file-secret"


def test_it_refuses_both_a_secret_and_a_secret_file(files: Path) -> None:
    path = write(files, 'proxmox_token_secret = "s"\nproxmox_token_secret_file = "token"\n')

    with pytest.raises(ConfigError, match="not both"):
        load(path)


def test_it_never_shows_the_secret_in_its_repr(files: Path) -> None:
    config = load(write(files, 'proxmox_token_secret = "hush-4411"\n'))

    assert "hush-4411" not in repr(config)


def test_it_lists_every_problem_at_once(files: Path) -> None:
    path = files / "agent.toml"
    path.write_text('zone = "a_b"\nproxmox_url = "http://pve:8006"\nsurprise = 1\n')

    with pytest.raises(ConfigError) as caught:
        load(path)

    lines = str(caught.value).splitlines()
    assert lines[0] == f"invalid agent configuration ({path}):"
    assert "  surprise: unknown key" in lines
    assert "  listen: missing" in lines
    assert "  zone: 'a_b' is not a DNS label (letters, digits, inner hyphens; up to 63)" in lines
    assert "  proxmox_url: must be an https:// URL (the API token must never travel in clear)" in lines
    assert "  proxmox_token_secret: missing (or give proxmox_token_secret_file)" in lines


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ('listen = "pve1:7443"', "listen: 'pve1' is not an IP address"),
        ('listen = "127.0.0.1"', "listen: '127.0.0.1' is not host:port"),
        ('proxmox_token_id = "root@pam"', "proxmox_token_id: 'root@pam' is not of the form user@realm!token"),
        ('proxmox_url = "https://127.0.0.1:8006/api2/json"', "proxmox_url: must be just https://host:port"),
        ("proxmox_timeout = 0", "proxmox_timeout: must be more than 0"),
        ("allowed_clients = []", "allowed_clients: is empty"),
        ('allowed_clients = "flexplane-orchestrator"', "allowed_clients: must be a list"),
        ('proxmox_ca = "missing.pem"', "proxmox_ca: "),
        ('log_level = "chatty"', "log_level: must be one of"),
        ('image_allow_hosts = "mirror"', "image_allow_hosts: must be a list of hosts or host:port"),
        (
            'image_allow_hosts = ["http://mirror/"]',
            "image_allow_hosts: 'http://mirror/' is not a host or host:port",
        ),
        (
            'image_allow_hosts = ["mirror:70000"]',
            "image_allow_hosts: 'mirror:70000': port 70000 is out of range",
        ),
        ("image_max_bytes = 0", "image_max_bytes: 0 is not a positive whole number of bytes"),
        ("image_max_bytes = 1.5", "image_max_bytes: 1.5 is not a positive whole number of bytes"),
        ('image_max_bytes = "lots"', "image_max_bytes: 'lots' is not a positive whole number of bytes"),
        (
            'image_staging_storage = "Local/iso"',
            "image_staging_storage: storage 'Local/iso' is not a Proxmox",
        ),
        ('image_ca = "missing.pem"', "image_ca: "),
    ],
)
def test_it_explains_an_invalid_value(files: Path, line: str, problem: str) -> None:
    path = write(files, f'proxmox_token_secret = "s"\n{line}\n')

    with pytest.raises(ConfigError, match=problem.replace("(", r"\(").replace(")", r"\)")):
        load(path)


def test_it_explains_a_file_that_is_not_toml(tmp_path: Path) -> None:
    path = tmp_path / "agent.toml"
    path.write_text("listen = \n")

    with pytest.raises(ConfigError, match="is not valid TOML"):
        load(path)


def test_it_explains_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read the configuration file"):
        load(tmp_path / "nope.toml")


def test_images_have_safe_defaults(files: Path) -> None:
    config = load(write(files, 'proxmox_token_secret = "s"\n'))

    assert config.image_allow_hosts == frozenset()
    assert config.image_cache == Path("/var/lib/flexplane/images")
    assert config.image_max_bytes == 64 * 1024**3
    assert config.image_staging_storage == "local"
    assert config.image_ca is None


def test_it_reads_the_image_settings(files: Path) -> None:
    config = load(
        write(
            files,
            'proxmox_token_secret = "s"\n'
            'image_allow_hosts = ["Mirror.Internal", "127.0.0.1:8080", "[::1]:8080"]\n'
            'image_cache = "images"\n'
            "image_max_bytes = 1048576\n"
            'image_staging_storage = "nfs-import"\n'
            'image_ca = "ca.crt"\n',
        )
    )

    assert config.image_allow_hosts == {"mirror.internal", "127.0.0.1:8080", "[::1]:8080"}
    assert config.image_cache == files / "images"
    assert config.image_max_bytes == 1048576
    assert config.image_staging_storage == "nfs-import"
    assert config.image_ca == files / "ca.crt"


def test_image_allow_hosts_from_the_environment_are_comma_separated(files: Path) -> None:
    config = load(
        write(files, 'proxmox_token_secret = "s"\n'),
        FLEXPLANE_AGENT_IMAGE_ALLOW_HOSTS="mirror.internal, 10.0.0.5:8080",
        FLEXPLANE_AGENT_IMAGE_MAX_BYTES="2048",
    )

    assert config.image_allow_hosts == {"mirror.internal", "10.0.0.5:8080"}
    assert config.image_max_bytes == 2048


def test_a_variable_of_the_prefix_that_names_no_key_is_not_a_key(files: Path) -> None:
    # FLEXPLANE_AGENT_CONFIG names the file itself (agent.__main__), not a key of it.
    config = load(
        write(files, 'proxmox_token_secret = "s"\n'), FLEXPLANE_AGENT_CONFIG=str(files / "agent.toml")
    )

    assert config.listen == "127.0.10.1:7443"
