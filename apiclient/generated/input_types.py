from typing import Optional

from pydantic import Field

from .base_model import BaseModel


class VirtualMachineFilter(BaseModel):
    """Every condition given must hold."""

    status: str | None = None
    "Proxmox's status, e.g. running or stopped."
    zone: str | None = None
    name_contains: str | None = Field(alias="nameContains", default=None)
    "A part of the name, in any case."
    search: str | None = None
    "A part of the name, an address, the status, the zone or the compute profile, in any case. The addresses and profiles are the VMs' tags: a scoped listing then reads each zone's /cluster/resources rather than the VDC's pools (one call per zone all the same)."


class CreateSecurityGroupInput(BaseModel):
    name: str
    "A DNS label of at most 32 characters, starting with a letter; it cannot change."
    description: str | None = None
    rules: list["SecurityGroupRuleInput"] | None = None
    "At most 50."


class SecurityGroupRuleInput(BaseModel):
    """A rule. Exactly one of cidr, group and vdcNetworks is given: where the traffic comes from (in) or goes to (out)."""

    direction: str
    "in or out."
    protocol: str
    "tcp, udp, icmp or any."
    ports: str | None = None
    "A port (22), a range (8000:8100; 8000-8100 is read the same) or a comma list of them (80,443): ports 1 to 65535, a range's first <= its last, at most 15 numbers (a range counts as two; Proxmox's limit); tcp and udp only; null or empty: every port. Stored and answered in Proxmox's syntax (80,443,8000:8100)."
    cidr: str | None = None
    "An IPv4 network such as 10.0.0.0/24, or 0.0.0.0/0 for anywhere."
    group: str | None = None
    "A group of the same VDC (this one included)."
    vdc_networks: bool | None = Field(alias="vdcNetworks", default=None)
    "true: the VDC's own networks."
    description: str | None = None
    "One line, at most 200 characters."


class UpdateSecurityGroupInput(BaseModel):
    """The fields to change; those left out keep their value. ``rules`` replaces them all."""

    description: str | None = None
    rules: list["SecurityGroupRuleInput"] | None = None
    "At most 50."


class PortForwardInput(BaseModel):
    public_ip: str = Field(alias="publicIp")
    "A public IP of the VDC."
    protocol: str
    "tcp or udp."
    port: int
    "1 to 65535, not forwarded yet on that IP and protocol."
    to_address: str = Field(alias="toAddress")
    "A VM's address on a network of the VDC."
    to_port: int | None = Field(alias="toPort", default=None)
    "Default: the same port."


class GatewayFirewallRuleInput(BaseModel):
    direction: str
    "in (to the VDC's networks) or out."
    action: str
    "allow or deny."
    protocol: str | None = None
    "tcp, udp, icmp or any (default)."
    source: str | None = None
    "A CIDR; default anywhere."
    destination: str | None = None
    "A CIDR (public or VM addresses); default anywhere."
    port_from: int | None = Field(alias="portFrom", default=None)
    "tcp and udp: the first destination port."
    port_to: int | None = Field(alias="portTo", default=None)
    "tcp and udp: the last destination port (default: portFrom)."
    description: str | None = None
    position: int | None = None
    "Where in the order, 0 first; default last."


class CreateKubernetesClusterInput(BaseModel):
    name: str
    "A DNS label of at most 40 characters, unique in the VDC."
    version: str
    "One of kubernetesVersions."
    network: str
    "A network of the VDC (its id, or <zone>/<name>)."
    control_plane: Optional["KubernetesControlPlaneInput"] = Field(alias="controlPlane", default=None)
    network_plugin: str | None = Field(alias="networkPlugin", default=None)
    "The network plugin (CNI) installed with the cluster, pinned to its Kubernetes version: cilium (the default: Cilium, VXLAN between the nodes), calico (Calico with its Kubernetes datastore, VXLAN between the nodes), or none (the nodes stay NotReady until you apply a plugin of your own)."
    node_pools: list["KubernetesNodePoolInput"] = Field(alias="nodePools")
    "1 to 10 pools."


class KubernetesControlPlaneInput(BaseModel):
    replicas: int | None = None
    "1 to 5 API server replicas. Default 2."
    exposure: str | None = None
    "shared (behind the installation's one address for every cluster's control plane, where it has one: the default there) or loadBalancer (an address of its own: the default elsewhere). Kept for the cluster's life."


class KubernetesNodePoolInput(BaseModel):
    name: str
    "A DNS label of at most 12 characters."
    compute_profile: str = Field(alias="computeProfile")
    "A compute profile the VDC allows."
    storage_profile: str = Field(alias="storageProfile")
    "A storage profile the VDC allows."
    count: int
    "1 to 100 nodes."
    network: str | None = None
    "A network of the VDC; default: the cluster's."


class CreateNetworkInput(BaseModel):
    name: str
    "A DNS label, unique in the VDC and zone."
    zone: str | None = None
    "A zone the VDC allows; may be left out when it allows only one."
    cidr: str
    "An IPv4 subnet, /16 to /29, of RFC 1918 or a range the zone allows."
    gateway: str | None = None
    "Default: the subnet's first usable address."
    dns: list[str] | None = None
    "Up to 3 resolvers; default: the zone's."


class CreateVirtualMachineInput(BaseModel):
    name: str
    "A DNS label: lowercase letters, digits, hyphens."
    compute_profile: str = Field(alias="computeProfile")
    "A compute profile the VDC allows."
    storage_profile: str = Field(alias="storageProfile")
    "A storage profile the VDC allows."
    image: str
    "An image the VDC allows."
    disk_gb: int | None = Field(alias="diskGb", default=None)
    "Boot disk size; default: the storage profile's, at least the image's."
    zone: str | None = None
    "A zone the VDC allows; left out, placement chooses among them (see placement's reasons)."
    ssh_keys: list[str] | None = Field(alias="sshKeys", default=None)
    "OpenSSH public keys for the image's default user."
    user_data: str | None = Field(alias="userData", default=None)
    "Cloud-init data merged in as vendor data (#cloud-config, a script, ...; at most 64 KiB)."
    idempotency_key: str | None = Field(alias="idempotencyKey", default=None)
    "Retrying with the same key returns the VM the first request made, never a second one."
    security_groups: list[str] | None = Field(alias="securityGroups", default=None)
    "The VDC's security groups its firewall follows; left out: default."
    networks: list["NicInput"] | None = None
    "Its NICs, in order (net0, net1, ...), all in one zone. Left out or null: one NIC on the VDC's default network of the zone it goes to; an empty list: no NIC."


class NicInput(BaseModel):
    network: str
    "A network of the VDC: its id (<zone>/<name>), or its name in the VM's zone."
    ip_address: str | None = Field(alias="ipAddress", default=None)
    "Its address; default: the network's next free one."


class ResizeVirtualMachineInput(BaseModel):
    id: str
    compute_profile: str | None = Field(alias="computeProfile", default=None)
    "Another compute profile the VDC allows (the VM must be stopped)."
    disk_gb: int | None = Field(alias="diskGb", default=None)
    "A bigger boot disk, in GiB: disks grow, never shrink (INVALID)."


CreateSecurityGroupInput.model_rebuild()
UpdateSecurityGroupInput.model_rebuild()
CreateKubernetesClusterInput.model_rebuild()
CreateVirtualMachineInput.model_rebuild()
