from datetime import datetime
from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .enums import SnapshotErrorCode, TaskStatus, VolumeErrorCode


class PortForwardFields(BaseModel):
    public_ip: str = Field(alias="publicIp")
    protocol: str
    port: int
    to_address: str = Field(alias="toAddress")
    to_port: int = Field(alias="toPort")


class PublicIpFields(BaseModel):
    address: str
    zone: str
    vdc: str
    nat_to: str | None = Field(alias="natTo")
    port_forwards: list["PublicIpFieldsPortForwards"] = Field(alias="portForwards")


class PublicIpFieldsPortForwards(PortForwardFields):
    pass


class EdgeGatewayFields(BaseModel):
    id: str
    vdc: str
    zone: str
    node: str | None
    generation: int
    applied_generation: int = Field(alias="appliedGeneration")
    applied: bool
    uplink_address: str = Field(alias="uplinkAddress")
    networks: list[str]
    public_ips: list["EdgeGatewayFieldsPublicIps"] = Field(alias="publicIps")
    firewall_rules: list["EdgeGatewayFieldsFirewallRules"] = Field(alias="firewallRules")


class EdgeGatewayFieldsPublicIps(PublicIpFields):
    pass


class EdgeGatewayFieldsFirewallRules(BaseModel):
    position: int
    direction: str
    action: str
    protocol: str
    source: str
    destination: str
    port_from: int | None = Field(alias="portFrom")
    port_to: int | None = Field(alias="portTo")
    description: str


class KubernetesClusterFields(BaseModel):
    name: str
    vdc: str
    version: str
    phase: str
    endpoint: str | None
    network: str
    created_at: datetime | None = Field(alias="createdAt")
    control_plane: "KubernetesClusterFieldsControlPlane" = Field(alias="controlPlane")
    health: Optional["KubernetesClusterFieldsHealth"]
    node_pools: list["KubernetesClusterFieldsNodePools"] = Field(alias="nodePools")
    conditions: list["KubernetesClusterFieldsConditions"]


class KubernetesClusterFieldsControlPlane(BaseModel):
    replicas: int
    ready_replicas: int = Field(alias="readyReplicas")
    version: str
    desired_version: str = Field(alias="desiredVersion")
    initialized: bool


class KubernetesClusterFieldsHealth(BaseModel):
    healthy: bool
    api_server_up: bool = Field(alias="apiServerUp")
    api_server_reason: str = Field(alias="apiServerReason")
    api_server_message: str = Field(alias="apiServerMessage")
    etcd_members: int = Field(alias="etcdMembers")
    etcd_members_ready: int = Field(alias="etcdMembersReady")
    konnectivity_agents: int | None = Field(alias="konnectivityAgents")
    konnectivity_agents_connected: int | None = Field(alias="konnectivityAgentsConnected")


class KubernetesClusterFieldsNodePools(BaseModel):
    name: str
    compute_profile: str = Field(alias="computeProfile")
    storage_profile: str = Field(alias="storageProfile")
    network: str
    count: int
    ready: int
    version: str


class KubernetesClusterFieldsConditions(BaseModel):
    object_: str = Field(alias="object")
    type_: str = Field(alias="type")
    status: str
    reason: str
    message: str


class NetworkFields(BaseModel):
    id: str
    name: str
    zone: str
    vdc: str
    cidr: str
    gateway: str
    dns: list[str]
    vnet: str
    is_default: bool = Field(alias="isDefault")
    pending: bool


class SecurityGroupFields(BaseModel):
    name: str
    vdc: str
    description: str
    rules: list["SecurityGroupFieldsRules"]


class SecurityGroupFieldsRules(BaseModel):
    direction: str
    protocol: str
    ports: str | None
    cidr: str | None
    group: str | None
    vdc_networks: bool = Field(alias="vdcNetworks")
    description: str


class ServiceAccountFields(BaseModel):
    id: str
    name: str
    vdc: str
    created: datetime | None
    expires: datetime | None
    created_by: str = Field(alias="createdBy")


class SnapshotErrorFields(BaseModel):
    field: str | None
    message: str
    code: SnapshotErrorCode


class SnapshotFields(BaseModel):
    vm: str
    name: str
    description: str
    taken_at: datetime | None = Field(alias="takenAt")
    includes_memory: bool = Field(alias="includesMemory")
    parent: str | None
    current: bool
    state: str | None


class TaskFields(BaseModel):
    id: str
    zone: str
    host: str
    type_: str = Field(alias="type")
    title: str
    virtual_machine_id: str | None = Field(alias="virtualMachineId")
    status: TaskStatus
    progress: float | None
    result: str | None
    started_at: datetime = Field(alias="startedAt")
    ended_at: datetime | None = Field(alias="endedAt")


class VdcFields(BaseModel):
    id: str
    name: str
    description: str
    organization: str
    zones: list[str]
    compute_profiles: list[str] = Field(alias="computeProfiles")
    storage_profiles: list[str] = Field(alias="storageProfiles")
    images: list[str]
    snapshots_per_vm: int = Field(alias="snapshotsPerVm")
    quota: "VdcFieldsQuota"
    usage: "VdcFieldsUsage"


class VdcFieldsQuota(BaseModel):
    vcpus: int
    memory_mib: int = Field(alias="memoryMib")
    disk_gb: int = Field(alias="diskGb")
    vms: int
    networks: int
    public_ips: int = Field(alias="publicIps")


class VdcFieldsUsage(BaseModel):
    vcpus: int
    memory_mib: int = Field(alias="memoryMib")
    disk_gb: int = Field(alias="diskGb")
    vms: int
    networks: int
    public_ips: int = Field(alias="publicIps")


class VirtualMachineFields(BaseModel):
    id: str
    name: str
    status: str
    zone: str
    host: str
    vdc: str
    cores: int
    memory_mb: int = Field(alias="memoryMb")
    disk_gb: float = Field(alias="diskGb")
    compute_profile: str | None = Field(alias="computeProfile")
    storage_profile: str | None = Field(alias="storageProfile")
    image: str | None
    lock: str | None


class VolumeErrorFields(BaseModel):
    field: str | None
    message: str
    code: VolumeErrorCode


class VolumeFields(BaseModel):
    id: str
    name: str
    vdc: str
    zone: str
    host: str
    storage_profile: str = Field(alias="storageProfile")
    size_gb: int = Field(alias="sizeGb")
    status: str
    attached_to: str | None = Field(alias="attachedTo")
    serial: str


class VolumeSnapshotFields(BaseModel):
    id: str
    name: str
    vdc: str
    zone: str
    host: str
    storage_profile: str = Field(alias="storageProfile")
    size_gb: int = Field(alias="sizeGb")
    status: str
    source: str | None
    source_deleted: bool = Field(alias="sourceDeleted")
    taken_at: datetime | None = Field(alias="takenAt")


PortForwardFields.model_rebuild()
PublicIpFields.model_rebuild()
EdgeGatewayFields.model_rebuild()
KubernetesClusterFields.model_rebuild()
NetworkFields.model_rebuild()
SecurityGroupFields.model_rebuild()
ServiceAccountFields.model_rebuild()
SnapshotErrorFields.model_rebuild()
SnapshotFields.model_rebuild()
TaskFields.model_rebuild()
VdcFields.model_rebuild()
VirtualMachineFields.model_rebuild()
VolumeErrorFields.model_rebuild()
VolumeFields.model_rebuild()
VolumeSnapshotFields.model_rebuild()
