from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional

DESCRIPTOR: _descriptor.FileDescriptor

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
    __slots__ = ("status", "data_json", "message", "errors")
    class ErrorsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    STATUS_FIELD_NUMBER: _ClassVar[int]
    DATA_JSON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    ERRORS_FIELD_NUMBER: _ClassVar[int]
    status: int
    data_json: bytes
    message: str
    errors: _containers.ScalarMap[str, str]
    def __init__(self, status: _Optional[int] = ..., data_json: _Optional[bytes] = ..., message: _Optional[str] = ..., errors: _Optional[_Mapping[str, str]] = ...) -> None: ...

class GetInfoRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class AgentInfo(_message.Message):
    __slots__ = ("version", "node", "zone", "identity")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    ZONE_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    version: str
    node: str
    zone: str
    identity: str
    def __init__(self, version: _Optional[str] = ..., node: _Optional[str] = ..., zone: _Optional[str] = ..., identity: _Optional[str] = ...) -> None: ...
