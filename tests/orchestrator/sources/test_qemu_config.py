"""sources.qemu_config: Proxmox's config strings, parsed and rendered (pure; no world needed)."""

from __future__ import annotations

import urllib.parse

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orchestrator.sources.qemu_config import (
    DHCP,
    ConfigChange,
    Drive,
    IpConfig,
    NetDevice,
    is_tag,
    parse_config,
    parse_drive,
    parse_ipconfig,
    parse_net,
    parse_size,
    parse_tags,
    render_drive,
    render_ipconfig,
    render_net,
    render_size,
    render_tags,
)

GIB = 1024**3

# ------------------------------------------------------------------------------------------ strategies

_word = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-_.", min_size=1, max_size=12)
_option_name = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=10).filter(
    lambda name: name != "file"
)
_option_value = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-_.:/;=", max_size=16)
_options = st.lists(st.tuples(_option_name, _option_value), max_size=6).map(tuple)
_drive_key = st.builds(
    lambda bus, index: f"{bus}{index}",
    st.sampled_from(["scsi", "virtio", "sata", "ide", "unused", "efidisk", "tpmstate"]),
    st.integers(min_value=0, max_value=30),
)
_volume = st.one_of(
    st.builds(
        lambda storage, name: f"{storage}:{name}",
        st.from_regex(r"[a-z][a-z0-9-]{0,10}", fullmatch=True),
        _word,
    ),
    st.sampled_from(["none", "cdrom", "/dev/sdb"]),
)
drives = st.builds(Drive, _drive_key, _volume, _options)
_mac = st.from_regex(r"[0-9A-F]{2}(:[0-9A-F]{2}){5}", fullmatch=True)
nets = st.builds(
    NetDevice,
    st.sampled_from(["virtio", "e1000", "rtl8139", "vmxnet3"]),
    st.one_of(st.none(), _mac),
    _options.filter(lambda options: all(name not in ("model", "macaddr") for name, _ in options)),
)
_address = st.from_regex(r"(dhcp|10\.\d{1,3}\.\d{1,3}\.\d{1,3}/\d{1,2})", fullmatch=True)
_address6 = st.from_regex(r"(auto|dhcp|fd00::[0-9a-f]{1,4}/64)", fullmatch=True)
ipconfigs = st.builds(
    IpConfig,
    st.one_of(st.none(), _address),
    st.one_of(st.none(), st.from_regex(r"10\.0\.0\.\d{1,3}", fullmatch=True)),
    st.one_of(st.none(), _address6),
    st.one_of(st.none(), st.just("fd00::1")),
)
_tag = st.from_regex(r"[a-z0-9_][a-z0-9_\-+.]{0,20}", fullmatch=True)


# ------------------------------------------------------------------------------------------ round trips


@given(st.integers(min_value=0, max_value=2**50))
def test_a_size_reads_back_as_the_bytes_it_was_rendered_from(size: int) -> None:
    assert parse_size(render_size(size)) == size


@given(drives)
def test_a_drive_reads_back_as_it_was_rendered(drive: Drive) -> None:
    assert parse_drive(drive.key, render_drive(drive)) == drive


@given(nets)
def test_a_network_device_reads_back_as_it_was_rendered(net: NetDevice) -> None:
    assert parse_net(render_net(net)) == net


@given(ipconfigs)
def test_an_ipconfig_reads_back_as_it_was_rendered(config: IpConfig) -> None:
    assert parse_ipconfig(render_ipconfig(config)) == config


@given(st.lists(_tag, max_size=8, unique=True))
def test_tags_read_back_as_they_were_rendered(tags: list[str]) -> None:
    assert parse_tags(render_tags(tags)) == tags
    assert all(is_tag(tag) for tag in tags)


# ------------------------------------------------------------------------------------------ sizes


@pytest.mark.parametrize(
    ("text", "size"),
    [("32G", 32 * GIB), ("512M", 512 * 1024**2), ("1.5G", 3 * GIB // 2), ("2T", 2 * 1024**4), ("4096", 4096)],
)
def test_sizes_read_in_proxmox_units(text: str, size: int) -> None:
    assert parse_size(text) == size


def test_a_size_renders_in_the_largest_unit_that_holds_it_exactly() -> None:
    assert render_size(20 * GIB) == "20G"
    assert render_size(1536 * 1024**2) == "1536M"
    assert render_size(1000) == "1000"


@pytest.mark.parametrize("text", ["", "G", "32X", "-1G", "1,5G"])
def test_what_is_no_size_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="is not a Proxmox size"):
        parse_size(text)


# ------------------------------------------------------------------------------------------ drives


def test_a_disk_reads_its_volume_storage_size_and_options() -> None:
    drive = parse_drive("scsi0", "local-lvm:base-9000-disk-0/vm-101-disk-0,discard=on,iothread=1,size=2252M")
    assert drive.volume == "local-lvm:base-9000-disk-0/vm-101-disk-0"
    assert drive.storage == "local-lvm"
    assert drive.size == 2252 * 1024**2
    assert drive.option("discard") == "on"
    assert drive.is_disk
    assert not drive.is_cdrom
    assert not drive.is_cloud_init


def test_a_drive_with_a_file_option_reads_it_as_its_volume() -> None:
    assert (
        parse_drive("virtio0", "file=local:100/vm-100-disk-0.qcow2,size=8G").volume
        == "local:100/vm-100-disk-0.qcow2"
    )


def test_a_cloud_init_drive_is_told_from_an_iso_and_an_empty_cdrom() -> None:
    assert parse_drive("ide2", "local-lvm:vm-101-cloudinit,media=cdrom").is_cloud_init
    assert parse_drive("ide2", "ceph:vm-101-disk-1,media=cdrom").is_cloud_init
    assert not parse_drive("ide2", "local:iso/debian.iso,media=cdrom").is_cloud_init
    assert not parse_drive("ide2", "none,media=cdrom").is_cloud_init


def test_limits_replace_the_options_they_name_and_keep_the_others() -> None:
    drive = parse_drive("scsi0", "local-lvm:vm-1-disk-0,iops_rd=5,size=8G")
    limited = drive.with_options({"iops_rd": "100", "mbps_wr": "50"})
    assert render_drive(limited) == "local-lvm:vm-1-disk-0,size=8G,iops_rd=100,mbps_wr=50"


def test_what_is_no_drive_is_refused() -> None:
    with pytest.raises(ValueError, match="is not a drive"):
        parse_drive("net0", "virtio,bridge=vmbr0")
    with pytest.raises(ValueError, match="names no volume"):
        parse_drive("scsi0", "media=cdrom")


# ------------------------------------------------------------------------------------------ net, ipconfig


def test_a_network_device_reads_its_model_mac_and_bridge() -> None:
    net = parse_net("virtio=BC:24:11:2A:3B:4C,bridge=vmbr0,firewall=1")
    assert (net.model, net.macaddr, net.bridge, net.option("firewall")) == (
        "virtio",
        "BC:24:11:2A:3B:4C",
        "vmbr0",
        "1",
    )


def test_the_long_form_of_a_network_device_reads_as_the_short_one() -> None:
    assert parse_net("model=e1000,macaddr=AA:BB:CC:DD:EE:FF,bridge=vmbr1") == parse_net(
        "e1000=AA:BB:CC:DD:EE:FF,bridge=vmbr1"
    )


def test_an_unknown_network_model_is_refused() -> None:
    with pytest.raises(ValueError, match="names no network device model"):
        parse_net("bridge=vmbr0")


def test_an_ipconfig_reads_any_order_and_renders_proxmoxs() -> None:
    config = parse_ipconfig("gw=10.0.0.1,ip=10.0.0.5/24")
    assert config == IpConfig(ip="10.0.0.5/24", gw="10.0.0.1")
    assert render_ipconfig(config) == "ip=10.0.0.5/24,gw=10.0.0.1"
    assert render_ipconfig(DHCP) == "ip=dhcp"
    with pytest.raises(ValueError, match="is not a field of an ipconfig"):
        parse_ipconfig("ip=dhcp,mtu=1400")


# ------------------------------------------------------------------------------------------ tags


def test_tags_read_every_separator_proxmox_ever_used() -> None:
    assert parse_tags("fp-vdc-demo;fp-cp-small,old tag") == ["fp-vdc-demo", "fp-cp-small", "old", "tag"]
    assert parse_tags(None) == []
    assert render_tags(["a", "b", "a"]) == "a;b"
    assert not is_tag("with space")
    assert not is_tag("-lead")


# ------------------------------------------------------------------------------------------ a whole config


CONFIG = {
    "boot": "order=virtio0;ide2;net0",
    "scsi0": "local-lvm:vm-101-disk-1,size=4G",
    "virtio0": "local-lvm:vm-101-disk-0,size=8G",
    "ide2": "local-lvm:vm-101-cloudinit,media=cdrom",
    "ide0": "local:iso/installer.iso,media=cdrom",
    "unused0": "ceph:vm-101-disk-2",
    "net0": "virtio=BC:24:11:00:00:01,bridge=vmbr0",
    "ipconfig0": "ip=dhcp",
    "tags": "fp-vdc-demo;fp-cp-small",
    "description": "Managed by flex.plane",
    "efidisk0": "broken,,",
}


def test_a_config_boots_from_the_first_disk_of_its_boot_order() -> None:
    config = parse_config(CONFIG)
    assert config.boot_disk is not None
    assert config.boot_disk.key == "virtio0"
    assert config.boot_disk.size == 8 * GIB


def test_without_a_boot_order_the_first_disk_by_bus_boots() -> None:
    config = parse_config({k: v for k, v in CONFIG.items() if k != "boot"} | {"scsi2": "local-lvm:x,size=1G"})
    assert config.boot_disk is not None
    assert config.boot_disk.key == "scsi0"


def test_a_config_without_disks_has_no_boot_disk() -> None:
    assert parse_config({"ide2": "none,media=cdrom"}).boot_disk is None


def test_a_config_knows_its_cloud_init_drive_and_a_free_slot_for_one() -> None:
    config = parse_config(CONFIG)
    assert config.has_cloud_init_drive
    assert config.free_cloud_init_slot == "ide3"
    bare = parse_config({"scsi0": "local-lvm:vm-1-disk-0,size=8G", "ide2": "none,media=cdrom"})
    assert not bare.has_cloud_init_drive
    assert bare.free_cloud_init_slot == "ide3"
    full = parse_config({f"ide{n}": "none,media=cdrom" for n in range(4)})
    assert full.free_cloud_init_slot is None


def test_a_config_lists_the_storages_of_its_drives_in_key_order() -> None:
    assert parse_config(CONFIG).storages == ["local", "local-lvm", "ceph"]


def test_a_config_reads_its_nets_ipconfigs_tags_and_description() -> None:
    config = parse_config(CONFIG)
    assert config.nets[0][1].bridge == "vmbr0"
    assert config.ipconfigs == ((0, DHCP),)
    assert config.tags == ("fp-vdc-demo", "fp-cp-small")
    assert config.description == "Managed by flex.plane"


def test_a_change_renders_the_parameters_proxmox_takes() -> None:
    drive = parse_drive("scsi0", "local-lvm:vm-1-disk-0,size=8G").with_options({"iops_rd": "10"})
    change = ConfigChange(
        cores=2,
        sockets=1,
        memory_mib=2048,
        cpu="host",
        guest_agent=True,
        ciuser="debian",
        ipconfigs=((0, DHCP),),
        ssh_keys=("ssh-ed25519 AAAA me@host",),
        cicustom="vendor=local:snippets/x.yaml",
        drives=(drive, Drive("ide3", "local-lvm:cloudinit")),
        tags=("fp-vdc-demo", "fp-cp-small"),
    )
    params = change.render()
    assert params == {
        "cores": 2,
        "sockets": 1,
        "memory": 2048,
        "cpu": "host",
        "agent": "1",
        "ciuser": "debian",
        "ipconfig0": "ip=dhcp",
        "sshkeys": "ssh-ed25519%20AAAA%20me%40host%0A",
        "cicustom": "vendor=local:snippets/x.yaml",
        "scsi0": "local-lvm:vm-1-disk-0,size=8G,iops_rd=10",
        "ide3": "local-lvm:cloudinit",
        "tags": "fp-vdc-demo;fp-cp-small",
    }
    assert urllib.parse.unquote(params["sshkeys"]) == "ssh-ed25519 AAAA me@host\n"
    assert ConfigChange().render() == {}
