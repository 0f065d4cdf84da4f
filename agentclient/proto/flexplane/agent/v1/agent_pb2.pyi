from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class GatewayUplink(_message.Message):
    __slots__ = ("bridge", "vlan", "address", "gateway")
    BRIDGE_FIELD_NUMBER: _ClassVar[int]
    VLAN_FIELD_NUMBER: _ClassVar[int]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    GATEWAY_FIELD_NUMBER: _ClassVar[int]
    bridge: str
    vlan: int
    address: str
    gateway: str
    def __init__(self, bridge: _Optional[str] = ..., vlan: _Optional[int] = ..., address: _Optional[str] = ..., gateway: _Optional[str] = ...) -> None: ...

class GatewayLeg(_message.Message):
    __slots__ = ("vnet", "address")
    VNET_FIELD_NUMBER: _ClassVar[int]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    vnet: str
    address: str
    def __init__(self, vnet: _Optional[str] = ..., address: _Optional[str] = ...) -> None: ...

class GatewayPublicIp(_message.Message):
    __slots__ = ("address", "nat_to")
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    NAT_TO_FIELD_NUMBER: _ClassVar[int]
    address: str
    nat_to: str
    def __init__(self, address: _Optional[str] = ..., nat_to: _Optional[str] = ...) -> None: ...

class GatewayPortForward(_message.Message):
    __slots__ = ("public_ip", "protocol", "port", "to_address", "to_port")
    PUBLIC_IP_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    TO_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    TO_PORT_FIELD_NUMBER: _ClassVar[int]
    public_ip: str
    protocol: str
    port: int
    to_address: str
    to_port: int
    def __init__(self, public_ip: _Optional[str] = ..., protocol: _Optional[str] = ..., port: _Optional[int] = ..., to_address: _Optional[str] = ..., to_port: _Optional[int] = ...) -> None: ...

class GatewayFirewallRule(_message.Message):
    __slots__ = ("direction", "action", "protocol", "source", "destination", "port_from", "port_to")
    DIRECTION_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    DESTINATION_FIELD_NUMBER: _ClassVar[int]
    PORT_FROM_FIELD_NUMBER: _ClassVar[int]
    PORT_TO_FIELD_NUMBER: _ClassVar[int]
    direction: str
    action: str
    protocol: str
    source: str
    destination: str
    port_from: int
    port_to: int
    def __init__(self, direction: _Optional[str] = ..., action: _Optional[str] = ..., protocol: _Optional[str] = ..., source: _Optional[str] = ..., destination: _Optional[str] = ..., port_from: _Optional[int] = ..., port_to: _Optional[int] = ...) -> None: ...

class GatewaySpec(_message.Message):
    __slots__ = ("id", "generation", "uplink", "legs", "public_ips", "forwards", "rules")
    ID_FIELD_NUMBER: _ClassVar[int]
    GENERATION_FIELD_NUMBER: _ClassVar[int]
    UPLINK_FIELD_NUMBER: _ClassVar[int]
    LEGS_FIELD_NUMBER: _ClassVar[int]
    PUBLIC_IPS_FIELD_NUMBER: _ClassVar[int]
    FORWARDS_FIELD_NUMBER: _ClassVar[int]
    RULES_FIELD_NUMBER: _ClassVar[int]
    id: str
    generation: int
    uplink: GatewayUplink
    legs: _containers.RepeatedCompositeFieldContainer[GatewayLeg]
    public_ips: _containers.RepeatedCompositeFieldContainer[GatewayPublicIp]
    forwards: _containers.RepeatedCompositeFieldContainer[GatewayPortForward]
    rules: _containers.RepeatedCompositeFieldContainer[GatewayFirewallRule]
    def __init__(self, id: _Optional[str] = ..., generation: _Optional[int] = ..., uplink: _Optional[_Union[GatewayUplink, _Mapping]] = ..., legs: _Optional[_Iterable[_Union[GatewayLeg, _Mapping]]] = ..., public_ips: _Optional[_Iterable[_Union[GatewayPublicIp, _Mapping]]] = ..., forwards: _Optional[_Iterable[_Union[GatewayPortForward, _Mapping]]] = ..., rules: _Optional[_Iterable[_Union[GatewayFirewallRule, _Mapping]]] = ...) -> None: ...

class GatewayRef(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    def __init__(self, id: _Optional[str] = ...) -> None: ...

class GatewayState(_message.Message):
    __slots__ = ("id", "generation", "node", "healthy", "detail", "counters")
    class CountersEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    GENERATION_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    HEALTHY_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    COUNTERS_FIELD_NUMBER: _ClassVar[int]
    id: str
    generation: int
    node: str
    healthy: bool
    detail: str
    counters: _containers.ScalarMap[str, int]
    def __init__(self, id: _Optional[str] = ..., generation: _Optional[int] = ..., node: _Optional[str] = ..., healthy: _Optional[bool] = ..., detail: _Optional[str] = ..., counters: _Optional[_Mapping[str, int]] = ...) -> None: ...

class RemoveGatewayReply(_message.Message):
    __slots__ = ("removed",)
    REMOVED_FIELD_NUMBER: _ClassVar[int]
    removed: bool
    def __init__(self, removed: _Optional[bool] = ...) -> None: ...

class ConsoleInput(_message.Message):
    __slots__ = ("vmid", "data")
    VMID_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    vmid: int
    data: bytes
    def __init__(self, vmid: _Optional[int] = ..., data: _Optional[bytes] = ...) -> None: ...

class ConsoleOutput(_message.Message):
    __slots__ = ("data",)
    DATA_FIELD_NUMBER: _ClassVar[int]
    data: bytes
    def __init__(self, data: _Optional[bytes] = ...) -> None: ...

class WriteSnippetRequest(_message.Message):
    __slots__ = ("name", "content")
    NAME_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    name: str
    content: bytes
    def __init__(self, name: _Optional[str] = ..., content: _Optional[bytes] = ...) -> None: ...

class WriteSnippetResponse(_message.Message):
    __slots__ = ("volume_id",)
    VOLUME_ID_FIELD_NUMBER: _ClassVar[int]
    volume_id: str
    def __init__(self, volume_id: _Optional[str] = ...) -> None: ...

class DeleteSnippetRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class DeleteSnippetResponse(_message.Message):
    __slots__ = ("deleted",)
    DELETED_FIELD_NUMBER: _ClassVar[int]
    deleted: bool
    def __init__(self, deleted: _Optional[bool] = ...) -> None: ...

class EnsureTemplateRequest(_message.Message):
    __slots__ = ("image", "url", "checksum", "storage")
    IMAGE_FIELD_NUMBER: _ClassVar[int]
    URL_FIELD_NUMBER: _ClassVar[int]
    CHECKSUM_FIELD_NUMBER: _ClassVar[int]
    STORAGE_FIELD_NUMBER: _ClassVar[int]
    image: str
    url: str
    checksum: str
    storage: str
    def __init__(self, image: _Optional[str] = ..., url: _Optional[str] = ..., checksum: _Optional[str] = ..., storage: _Optional[str] = ...) -> None: ...

class TemplateProgress(_message.Message):
    __slots__ = ("phase", "bytes_done", "bytes_total", "message", "template_vmid", "node")
    class Phase(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        PHASE_UNSPECIFIED: _ClassVar[TemplateProgress.Phase]
        PHASE_CHECKING: _ClassVar[TemplateProgress.Phase]
        PHASE_DOWNLOADING: _ClassVar[TemplateProgress.Phase]
        PHASE_VERIFYING: _ClassVar[TemplateProgress.Phase]
        PHASE_IMPORTING: _ClassVar[TemplateProgress.Phase]
        PHASE_DONE: _ClassVar[TemplateProgress.Phase]
    PHASE_UNSPECIFIED: TemplateProgress.Phase
    PHASE_CHECKING: TemplateProgress.Phase
    PHASE_DOWNLOADING: TemplateProgress.Phase
    PHASE_VERIFYING: TemplateProgress.Phase
    PHASE_IMPORTING: TemplateProgress.Phase
    PHASE_DONE: TemplateProgress.Phase
    PHASE_FIELD_NUMBER: _ClassVar[int]
    BYTES_DONE_FIELD_NUMBER: _ClassVar[int]
    BYTES_TOTAL_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    TEMPLATE_VMID_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    phase: TemplateProgress.Phase
    bytes_done: int
    bytes_total: int
    message: str
    template_vmid: int
    node: str
    def __init__(self, phase: _Optional[_Union[TemplateProgress.Phase, str]] = ..., bytes_done: _Optional[int] = ..., bytes_total: _Optional[int] = ..., message: _Optional[str] = ..., template_vmid: _Optional[int] = ..., node: _Optional[str] = ...) -> None: ...

class ProxmoxRequest(_message.Message):
    __slots__ = ("method", "path", "params")
    class ParamsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    METHOD_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    PARAMS_FIELD_NUMBER: _ClassVar[int]
    method: str
    path: str
    params: _containers.ScalarMap[str, str]
    def __init__(self, method: _Optional[str] = ..., path: _Optional[str] = ..., params: _Optional[_Mapping[str, str]] = ...) -> None: ...

class ProxmoxResponse(_message.Message):
    __slots__ = ("status", "document_json", "message", "errors")
    class ErrorsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    STATUS_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_JSON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    ERRORS_FIELD_NUMBER: _ClassVar[int]
    status: int
    document_json: bytes
    message: str
    errors: _containers.ScalarMap[str, str]
    def __init__(self, status: _Optional[int] = ..., document_json: _Optional[bytes] = ..., message: _Optional[str] = ..., errors: _Optional[_Mapping[str, str]] = ...) -> None: ...

class GetInfoRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class AgentInfo(_message.Message):
    __slots__ = ("version", "node", "zone", "identity", "proxmox_version", "certificate_not_after", "renewal", "update", "package_version")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    ZONE_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    PROXMOX_VERSION_FIELD_NUMBER: _ClassVar[int]
    CERTIFICATE_NOT_AFTER_FIELD_NUMBER: _ClassVar[int]
    RENEWAL_FIELD_NUMBER: _ClassVar[int]
    UPDATE_FIELD_NUMBER: _ClassVar[int]
    PACKAGE_VERSION_FIELD_NUMBER: _ClassVar[int]
    version: str
    node: str
    zone: str
    identity: str
    proxmox_version: str
    certificate_not_after: int
    renewal: RenewalStatus
    update: UpdateStatus
    package_version: str
    def __init__(self, version: _Optional[str] = ..., node: _Optional[str] = ..., zone: _Optional[str] = ..., identity: _Optional[str] = ..., proxmox_version: _Optional[str] = ..., certificate_not_after: _Optional[int] = ..., renewal: _Optional[_Union[RenewalStatus, _Mapping]] = ..., update: _Optional[_Union[UpdateStatus, _Mapping]] = ..., package_version: _Optional[str] = ...) -> None: ...

class RenewalStatus(_message.Message):
    __slots__ = ("last_success", "last_error", "failures", "next_attempt")
    LAST_SUCCESS_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_FIELD_NUMBER: _ClassVar[int]
    FAILURES_FIELD_NUMBER: _ClassVar[int]
    NEXT_ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    last_success: int
    last_error: str
    failures: int
    next_attempt: int
    def __init__(self, last_success: _Optional[int] = ..., last_error: _Optional[str] = ..., failures: _Optional[int] = ..., next_attempt: _Optional[int] = ...) -> None: ...

class UpdateNowRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class UpdateNowReply(_message.Message):
    __slots__ = ("outcome", "offered_version", "applying", "running_version")
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    OFFERED_VERSION_FIELD_NUMBER: _ClassVar[int]
    APPLYING_FIELD_NUMBER: _ClassVar[int]
    RUNNING_VERSION_FIELD_NUMBER: _ClassVar[int]
    outcome: str
    offered_version: str
    applying: bool
    running_version: str
    def __init__(self, outcome: _Optional[str] = ..., offered_version: _Optional[str] = ..., applying: _Optional[bool] = ..., running_version: _Optional[str] = ...) -> None: ...

class UpdateStatus(_message.Message):
    __slots__ = ("result", "from_version", "to_version", "message", "at")
    class Result(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        RESULT_UNSPECIFIED: _ClassVar[UpdateStatus.Result]
        RESULT_NONE: _ClassVar[UpdateStatus.Result]
        RESULT_UPDATED: _ClassVar[UpdateStatus.Result]
        RESULT_REFUSED: _ClassVar[UpdateStatus.Result]
        RESULT_ROLLED_BACK: _ClassVar[UpdateStatus.Result]
        RESULT_FAILED: _ClassVar[UpdateStatus.Result]
    RESULT_UNSPECIFIED: UpdateStatus.Result
    RESULT_NONE: UpdateStatus.Result
    RESULT_UPDATED: UpdateStatus.Result
    RESULT_REFUSED: UpdateStatus.Result
    RESULT_ROLLED_BACK: UpdateStatus.Result
    RESULT_FAILED: UpdateStatus.Result
    RESULT_FIELD_NUMBER: _ClassVar[int]
    FROM_VERSION_FIELD_NUMBER: _ClassVar[int]
    TO_VERSION_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    AT_FIELD_NUMBER: _ClassVar[int]
    result: UpdateStatus.Result
    from_version: str
    to_version: str
    message: str
    at: int
    def __init__(self, result: _Optional[_Union[UpdateStatus.Result, str]] = ..., from_version: _Optional[str] = ..., to_version: _Optional[str] = ..., message: _Optional[str] = ..., at: _Optional[int] = ...) -> None: ...
