from . import meta_v1_pb2 as _meta_v1_pb2
from . import options_pb2 as _options_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class CSIDriver(_message.Message):
    __slots__ = ("metadata", "spec")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    metadata: _meta_v1_pb2.ObjectMeta
    spec: CSIDriverSpec
    def __init__(self, metadata: _Optional[_Union[_meta_v1_pb2.ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[CSIDriverSpec, _Mapping]] = ...) -> None: ...

class CSIDriverList(_message.Message):
    __slots__ = ("metadata", "items")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    metadata: _meta_v1_pb2.ListMeta
    items: _containers.RepeatedCompositeFieldContainer[CSIDriver]
    def __init__(self, metadata: _Optional[_Union[_meta_v1_pb2.ListMeta, _Mapping]] = ..., items: _Optional[_Iterable[_Union[CSIDriver, _Mapping]]] = ...) -> None: ...

class CSIDriverSpec(_message.Message):
    __slots__ = ("attachRequired", "podInfoOnMount", "volumeLifecycleModes", "storageCapacity", "fsGroupPolicy", "tokenRequests", "requiresRepublish", "seLinuxMount", "nodeAllocatableUpdatePeriodSeconds", "serviceAccountTokenInSecrets")
    ATTACHREQUIRED_FIELD_NUMBER: _ClassVar[int]
    PODINFOONMOUNT_FIELD_NUMBER: _ClassVar[int]
    VOLUMELIFECYCLEMODES_FIELD_NUMBER: _ClassVar[int]
    STORAGECAPACITY_FIELD_NUMBER: _ClassVar[int]
    FSGROUPPOLICY_FIELD_NUMBER: _ClassVar[int]
    TOKENREQUESTS_FIELD_NUMBER: _ClassVar[int]
    REQUIRESREPUBLISH_FIELD_NUMBER: _ClassVar[int]
    SELINUXMOUNT_FIELD_NUMBER: _ClassVar[int]
    NODEALLOCATABLEUPDATEPERIODSECONDS_FIELD_NUMBER: _ClassVar[int]
    SERVICEACCOUNTTOKENINSECRETS_FIELD_NUMBER: _ClassVar[int]
    attachRequired: bool
    podInfoOnMount: bool
    volumeLifecycleModes: _containers.RepeatedScalarFieldContainer[str]
    storageCapacity: bool
    fsGroupPolicy: str
    tokenRequests: _containers.RepeatedCompositeFieldContainer[TokenRequest]
    requiresRepublish: bool
    seLinuxMount: bool
    nodeAllocatableUpdatePeriodSeconds: int
    serviceAccountTokenInSecrets: bool
    def __init__(self, attachRequired: _Optional[bool] = ..., podInfoOnMount: _Optional[bool] = ..., volumeLifecycleModes: _Optional[_Iterable[str]] = ..., storageCapacity: _Optional[bool] = ..., fsGroupPolicy: _Optional[str] = ..., tokenRequests: _Optional[_Iterable[_Union[TokenRequest, _Mapping]]] = ..., requiresRepublish: _Optional[bool] = ..., seLinuxMount: _Optional[bool] = ..., nodeAllocatableUpdatePeriodSeconds: _Optional[int] = ..., serviceAccountTokenInSecrets: _Optional[bool] = ...) -> None: ...

class CSINode(_message.Message):
    __slots__ = ("metadata", "spec")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    metadata: _meta_v1_pb2.ObjectMeta
    spec: CSINodeSpec
    def __init__(self, metadata: _Optional[_Union[_meta_v1_pb2.ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[CSINodeSpec, _Mapping]] = ...) -> None: ...

class CSINodeDriver(_message.Message):
    __slots__ = ("name", "nodeID", "topologyKeys", "allocatable")
    NAME_FIELD_NUMBER: _ClassVar[int]
    NODEID_FIELD_NUMBER: _ClassVar[int]
    TOPOLOGYKEYS_FIELD_NUMBER: _ClassVar[int]
    ALLOCATABLE_FIELD_NUMBER: _ClassVar[int]
    name: str
    nodeID: str
    topologyKeys: _containers.RepeatedScalarFieldContainer[str]
    allocatable: VolumeNodeResources
    def __init__(self, name: _Optional[str] = ..., nodeID: _Optional[str] = ..., topologyKeys: _Optional[_Iterable[str]] = ..., allocatable: _Optional[_Union[VolumeNodeResources, _Mapping]] = ...) -> None: ...

class CSINodeList(_message.Message):
    __slots__ = ("metadata", "items")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    metadata: _meta_v1_pb2.ListMeta
    items: _containers.RepeatedCompositeFieldContainer[CSINode]
    def __init__(self, metadata: _Optional[_Union[_meta_v1_pb2.ListMeta, _Mapping]] = ..., items: _Optional[_Iterable[_Union[CSINode, _Mapping]]] = ...) -> None: ...

class CSINodeSpec(_message.Message):
    __slots__ = ("drivers",)
    DRIVERS_FIELD_NUMBER: _ClassVar[int]
    drivers: _containers.RepeatedCompositeFieldContainer[CSINodeDriver]
    def __init__(self, drivers: _Optional[_Iterable[_Union[CSINodeDriver, _Mapping]]] = ...) -> None: ...

class TokenRequest(_message.Message):
    __slots__ = ("audience", "expirationSeconds")
    AUDIENCE_FIELD_NUMBER: _ClassVar[int]
    EXPIRATIONSECONDS_FIELD_NUMBER: _ClassVar[int]
    audience: str
    expirationSeconds: int
    def __init__(self, audience: _Optional[str] = ..., expirationSeconds: _Optional[int] = ...) -> None: ...

class VolumeNodeResources(_message.Message):
    __slots__ = ("count",)
    COUNT_FIELD_NUMBER: _ClassVar[int]
    count: int
    def __init__(self, count: _Optional[int] = ...) -> None: ...
