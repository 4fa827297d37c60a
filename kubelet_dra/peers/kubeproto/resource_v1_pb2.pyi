from . import core_v1_pb2 as _core_v1_pb2
from . import meta_v1_pb2 as _meta_v1_pb2
from . import options_pb2 as _options_pb2
from . import resource_quantity_pb2 as _resource_quantity_pb2
from . import runtime_pb2 as _runtime_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class AllocatedDeviceStatus(_message.Message):
    __slots__ = ("driver", "pool", "device", "shareID", "conditions", "data", "networkData")
    DRIVER_FIELD_NUMBER: _ClassVar[int]
    POOL_FIELD_NUMBER: _ClassVar[int]
    DEVICE_FIELD_NUMBER: _ClassVar[int]
    SHAREID_FIELD_NUMBER: _ClassVar[int]
    CONDITIONS_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    NETWORKDATA_FIELD_NUMBER: _ClassVar[int]
    driver: str
    pool: str
    device: str
    shareID: str
    conditions: _containers.RepeatedCompositeFieldContainer[_meta_v1_pb2.Condition]
    data: _runtime_pb2.RawExtension
    networkData: NetworkDeviceData
    def __init__(self, driver: _Optional[str] = ..., pool: _Optional[str] = ..., device: _Optional[str] = ..., shareID: _Optional[str] = ..., conditions: _Optional[_Iterable[_Union[_meta_v1_pb2.Condition, _Mapping]]] = ..., data: _Optional[_Union[_runtime_pb2.RawExtension, _Mapping]] = ..., networkData: _Optional[_Union[NetworkDeviceData, _Mapping]] = ...) -> None: ...

class AllocationResult(_message.Message):
    __slots__ = ("devices", "nodeSelector", "allocationTimestamp")
    DEVICES_FIELD_NUMBER: _ClassVar[int]
    NODESELECTOR_FIELD_NUMBER: _ClassVar[int]
    ALLOCATIONTIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    devices: DeviceAllocationResult
    nodeSelector: _core_v1_pb2.NodeSelector
    allocationTimestamp: _meta_v1_pb2.Time
    def __init__(self, devices: _Optional[_Union[DeviceAllocationResult, _Mapping]] = ..., nodeSelector: _Optional[_Union[_core_v1_pb2.NodeSelector, _Mapping]] = ..., allocationTimestamp: _Optional[_Union[_meta_v1_pb2.Time, _Mapping]] = ...) -> None: ...

class CELDeviceSelector(_message.Message):
    __slots__ = ("expression",)
    EXPRESSION_FIELD_NUMBER: _ClassVar[int]
    expression: str
    def __init__(self, expression: _Optional[str] = ...) -> None: ...

class CapacityRequestPolicy(_message.Message):
    __slots__ = ("default", "validValues", "validRange")
    DEFAULT_FIELD_NUMBER: _ClassVar[int]
    VALIDVALUES_FIELD_NUMBER: _ClassVar[int]
    VALIDRANGE_FIELD_NUMBER: _ClassVar[int]
    default: _resource_quantity_pb2.Quantity
    validValues: _containers.RepeatedCompositeFieldContainer[_resource_quantity_pb2.Quantity]
    validRange: CapacityRequestPolicyRange
    def __init__(self, default: _Optional[_Union[_resource_quantity_pb2.Quantity, _Mapping]] = ..., validValues: _Optional[_Iterable[_Union[_resource_quantity_pb2.Quantity, _Mapping]]] = ..., validRange: _Optional[_Union[CapacityRequestPolicyRange, _Mapping]] = ...) -> None: ...

class CapacityRequestPolicyRange(_message.Message):
    __slots__ = ("min", "max", "step")
    MIN_FIELD_NUMBER: _ClassVar[int]
    MAX_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    min: _resource_quantity_pb2.Quantity
    max: _resource_quantity_pb2.Quantity
    step: _resource_quantity_pb2.Quantity
    def __init__(self, min: _Optional[_Union[_resource_quantity_pb2.Quantity, _Mapping]] = ..., max: _Optional[_Union[_resource_quantity_pb2.Quantity, _Mapping]] = ..., step: _Optional[_Union[_resource_quantity_pb2.Quantity, _Mapping]] = ...) -> None: ...

class CapacityRequirements(_message.Message):
    __slots__ = ("requests",)
    class RequestsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: _resource_quantity_pb2.Quantity
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[_resource_quantity_pb2.Quantity, _Mapping]] = ...) -> None: ...
    REQUESTS_FIELD_NUMBER: _ClassVar[int]
    requests: _containers.MessageMap[str, _resource_quantity_pb2.Quantity]
    def __init__(self, requests: _Optional[_Mapping[str, _resource_quantity_pb2.Quantity]] = ...) -> None: ...

class Counter(_message.Message):
    __slots__ = ("value",)
    VALUE_FIELD_NUMBER: _ClassVar[int]
    value: _resource_quantity_pb2.Quantity
    def __init__(self, value: _Optional[_Union[_resource_quantity_pb2.Quantity, _Mapping]] = ...) -> None: ...

class CounterSet(_message.Message):
    __slots__ = ("name", "counters")
    class CountersEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: Counter
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[Counter, _Mapping]] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    COUNTERS_FIELD_NUMBER: _ClassVar[int]
    name: str
    counters: _containers.MessageMap[str, Counter]
    def __init__(self, name: _Optional[str] = ..., counters: _Optional[_Mapping[str, Counter]] = ...) -> None: ...

class Device(_message.Message):
    __slots__ = ("name", "attributes", "capacity", "consumesCounters", "nodeName", "nodeSelector", "allNodes", "taints", "bindsToNode", "bindingConditions", "bindingFailureConditions", "allowMultipleAllocations", "nodeAllocatableResources")
    class AttributesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: DeviceAttribute
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[DeviceAttribute, _Mapping]] = ...) -> None: ...
    class CapacityEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: DeviceCapacity
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[DeviceCapacity, _Mapping]] = ...) -> None: ...
    class NodeAllocatableResourcesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: NodeAllocatableResource
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[NodeAllocatableResource, _Mapping]] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    CAPACITY_FIELD_NUMBER: _ClassVar[int]
    CONSUMESCOUNTERS_FIELD_NUMBER: _ClassVar[int]
    NODENAME_FIELD_NUMBER: _ClassVar[int]
    NODESELECTOR_FIELD_NUMBER: _ClassVar[int]
    ALLNODES_FIELD_NUMBER: _ClassVar[int]
    TAINTS_FIELD_NUMBER: _ClassVar[int]
    BINDSTONODE_FIELD_NUMBER: _ClassVar[int]
    BINDINGCONDITIONS_FIELD_NUMBER: _ClassVar[int]
    BINDINGFAILURECONDITIONS_FIELD_NUMBER: _ClassVar[int]
    ALLOWMULTIPLEALLOCATIONS_FIELD_NUMBER: _ClassVar[int]
    NODEALLOCATABLERESOURCES_FIELD_NUMBER: _ClassVar[int]
    name: str
    attributes: _containers.MessageMap[str, DeviceAttribute]
    capacity: _containers.MessageMap[str, DeviceCapacity]
    consumesCounters: _containers.RepeatedCompositeFieldContainer[DeviceCounterConsumption]
    nodeName: str
    nodeSelector: _core_v1_pb2.NodeSelector
    allNodes: bool
    taints: _containers.RepeatedCompositeFieldContainer[DeviceTaint]
    bindsToNode: bool
    bindingConditions: _containers.RepeatedScalarFieldContainer[str]
    bindingFailureConditions: _containers.RepeatedScalarFieldContainer[str]
    allowMultipleAllocations: bool
    nodeAllocatableResources: _containers.MessageMap[str, NodeAllocatableResource]
    def __init__(self, name: _Optional[str] = ..., attributes: _Optional[_Mapping[str, DeviceAttribute]] = ..., capacity: _Optional[_Mapping[str, DeviceCapacity]] = ..., consumesCounters: _Optional[_Iterable[_Union[DeviceCounterConsumption, _Mapping]]] = ..., nodeName: _Optional[str] = ..., nodeSelector: _Optional[_Union[_core_v1_pb2.NodeSelector, _Mapping]] = ..., allNodes: _Optional[bool] = ..., taints: _Optional[_Iterable[_Union[DeviceTaint, _Mapping]]] = ..., bindsToNode: _Optional[bool] = ..., bindingConditions: _Optional[_Iterable[str]] = ..., bindingFailureConditions: _Optional[_Iterable[str]] = ..., allowMultipleAllocations: _Optional[bool] = ..., nodeAllocatableResources: _Optional[_Mapping[str, NodeAllocatableResource]] = ...) -> None: ...

class DeviceAllocationConfiguration(_message.Message):
    __slots__ = ("source", "requests", "deviceConfiguration")
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    REQUESTS_FIELD_NUMBER: _ClassVar[int]
    DEVICECONFIGURATION_FIELD_NUMBER: _ClassVar[int]
    source: str
    requests: _containers.RepeatedScalarFieldContainer[str]
    deviceConfiguration: DeviceConfiguration
    def __init__(self, source: _Optional[str] = ..., requests: _Optional[_Iterable[str]] = ..., deviceConfiguration: _Optional[_Union[DeviceConfiguration, _Mapping]] = ...) -> None: ...

class DeviceAllocationResult(_message.Message):
    __slots__ = ("results", "config")
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[DeviceRequestAllocationResult]
    config: _containers.RepeatedCompositeFieldContainer[DeviceAllocationConfiguration]
    def __init__(self, results: _Optional[_Iterable[_Union[DeviceRequestAllocationResult, _Mapping]]] = ..., config: _Optional[_Iterable[_Union[DeviceAllocationConfiguration, _Mapping]]] = ...) -> None: ...

class DeviceAttribute(_message.Message):
    __slots__ = ("int", "bool", "string", "version", "ints", "bools", "strings", "versions")
    INT_FIELD_NUMBER: _ClassVar[int]
    BOOL_FIELD_NUMBER: _ClassVar[int]
    STRING_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    INTS_FIELD_NUMBER: _ClassVar[int]
    BOOLS_FIELD_NUMBER: _ClassVar[int]
    STRINGS_FIELD_NUMBER: _ClassVar[int]
    VERSIONS_FIELD_NUMBER: _ClassVar[int]
    int: int
    bool: bool
    string: str
    version: str
    ints: _containers.RepeatedScalarFieldContainer[int]
    bools: _containers.RepeatedScalarFieldContainer[bool]
    strings: _containers.RepeatedScalarFieldContainer[str]
    versions: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, int: _Optional[int] = ..., bool: _Optional[bool] = ..., string: _Optional[str] = ..., version: _Optional[str] = ..., ints: _Optional[_Iterable[int]] = ..., bools: _Optional[_Iterable[bool]] = ..., strings: _Optional[_Iterable[str]] = ..., versions: _Optional[_Iterable[str]] = ...) -> None: ...

class DeviceCapacity(_message.Message):
    __slots__ = ("value", "requestPolicy")
    VALUE_FIELD_NUMBER: _ClassVar[int]
    REQUESTPOLICY_FIELD_NUMBER: _ClassVar[int]
    value: _resource_quantity_pb2.Quantity
    requestPolicy: CapacityRequestPolicy
    def __init__(self, value: _Optional[_Union[_resource_quantity_pb2.Quantity, _Mapping]] = ..., requestPolicy: _Optional[_Union[CapacityRequestPolicy, _Mapping]] = ...) -> None: ...

class DeviceClaim(_message.Message):
    __slots__ = ("requests", "constraints", "config")
    REQUESTS_FIELD_NUMBER: _ClassVar[int]
    CONSTRAINTS_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    requests: _containers.RepeatedCompositeFieldContainer[DeviceRequest]
    constraints: _containers.RepeatedCompositeFieldContainer[DeviceConstraint]
    config: _containers.RepeatedCompositeFieldContainer[DeviceClaimConfiguration]
    def __init__(self, requests: _Optional[_Iterable[_Union[DeviceRequest, _Mapping]]] = ..., constraints: _Optional[_Iterable[_Union[DeviceConstraint, _Mapping]]] = ..., config: _Optional[_Iterable[_Union[DeviceClaimConfiguration, _Mapping]]] = ...) -> None: ...

class DeviceClaimConfiguration(_message.Message):
    __slots__ = ("requests", "deviceConfiguration")
    REQUESTS_FIELD_NUMBER: _ClassVar[int]
    DEVICECONFIGURATION_FIELD_NUMBER: _ClassVar[int]
    requests: _containers.RepeatedScalarFieldContainer[str]
    deviceConfiguration: DeviceConfiguration
    def __init__(self, requests: _Optional[_Iterable[str]] = ..., deviceConfiguration: _Optional[_Union[DeviceConfiguration, _Mapping]] = ...) -> None: ...

class DeviceClass(_message.Message):
    __slots__ = ("metadata", "spec")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    metadata: _meta_v1_pb2.ObjectMeta
    spec: DeviceClassSpec
    def __init__(self, metadata: _Optional[_Union[_meta_v1_pb2.ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[DeviceClassSpec, _Mapping]] = ...) -> None: ...

class DeviceClassConfiguration(_message.Message):
    __slots__ = ("deviceConfiguration",)
    DEVICECONFIGURATION_FIELD_NUMBER: _ClassVar[int]
    deviceConfiguration: DeviceConfiguration
    def __init__(self, deviceConfiguration: _Optional[_Union[DeviceConfiguration, _Mapping]] = ...) -> None: ...

class DeviceClassList(_message.Message):
    __slots__ = ("metadata", "items")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    metadata: _meta_v1_pb2.ListMeta
    items: _containers.RepeatedCompositeFieldContainer[DeviceClass]
    def __init__(self, metadata: _Optional[_Union[_meta_v1_pb2.ListMeta, _Mapping]] = ..., items: _Optional[_Iterable[_Union[DeviceClass, _Mapping]]] = ...) -> None: ...

class DeviceClassSpec(_message.Message):
    __slots__ = ("selectors", "config", "extendedResourceName")
    SELECTORS_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    EXTENDEDRESOURCENAME_FIELD_NUMBER: _ClassVar[int]
    selectors: _containers.RepeatedCompositeFieldContainer[DeviceSelector]
    config: _containers.RepeatedCompositeFieldContainer[DeviceClassConfiguration]
    extendedResourceName: str
    def __init__(self, selectors: _Optional[_Iterable[_Union[DeviceSelector, _Mapping]]] = ..., config: _Optional[_Iterable[_Union[DeviceClassConfiguration, _Mapping]]] = ..., extendedResourceName: _Optional[str] = ...) -> None: ...

class DeviceConfiguration(_message.Message):
    __slots__ = ("opaque",)
    OPAQUE_FIELD_NUMBER: _ClassVar[int]
    opaque: OpaqueDeviceConfiguration
    def __init__(self, opaque: _Optional[_Union[OpaqueDeviceConfiguration, _Mapping]] = ...) -> None: ...

class DeviceConstraint(_message.Message):
    __slots__ = ("requests", "matchAttribute", "distinctAttribute")
    REQUESTS_FIELD_NUMBER: _ClassVar[int]
    MATCHATTRIBUTE_FIELD_NUMBER: _ClassVar[int]
    DISTINCTATTRIBUTE_FIELD_NUMBER: _ClassVar[int]
    requests: _containers.RepeatedScalarFieldContainer[str]
    matchAttribute: str
    distinctAttribute: str
    def __init__(self, requests: _Optional[_Iterable[str]] = ..., matchAttribute: _Optional[str] = ..., distinctAttribute: _Optional[str] = ...) -> None: ...

class DeviceCounterConsumption(_message.Message):
    __slots__ = ("counterSet", "counters")
    class CountersEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: Counter
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[Counter, _Mapping]] = ...) -> None: ...
    COUNTERSET_FIELD_NUMBER: _ClassVar[int]
    COUNTERS_FIELD_NUMBER: _ClassVar[int]
    counterSet: str
    counters: _containers.MessageMap[str, Counter]
    def __init__(self, counterSet: _Optional[str] = ..., counters: _Optional[_Mapping[str, Counter]] = ...) -> None: ...

class DeviceRequest(_message.Message):
    __slots__ = ("name", "exactly", "firstAvailable")
    NAME_FIELD_NUMBER: _ClassVar[int]
    EXACTLY_FIELD_NUMBER: _ClassVar[int]
    FIRSTAVAILABLE_FIELD_NUMBER: _ClassVar[int]
    name: str
    exactly: ExactDeviceRequest
    firstAvailable: _containers.RepeatedCompositeFieldContainer[DeviceSubRequest]
    def __init__(self, name: _Optional[str] = ..., exactly: _Optional[_Union[ExactDeviceRequest, _Mapping]] = ..., firstAvailable: _Optional[_Iterable[_Union[DeviceSubRequest, _Mapping]]] = ...) -> None: ...

class DeviceRequestAllocationResult(_message.Message):
    __slots__ = ("request", "driver", "pool", "device", "adminAccess", "tolerations", "bindingConditions", "bindingFailureConditions", "shareID", "consumedCapacity", "skipNodeOperations")
    class ConsumedCapacityEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: _resource_quantity_pb2.Quantity
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[_resource_quantity_pb2.Quantity, _Mapping]] = ...) -> None: ...
    REQUEST_FIELD_NUMBER: _ClassVar[int]
    DRIVER_FIELD_NUMBER: _ClassVar[int]
    POOL_FIELD_NUMBER: _ClassVar[int]
    DEVICE_FIELD_NUMBER: _ClassVar[int]
    ADMINACCESS_FIELD_NUMBER: _ClassVar[int]
    TOLERATIONS_FIELD_NUMBER: _ClassVar[int]
    BINDINGCONDITIONS_FIELD_NUMBER: _ClassVar[int]
    BINDINGFAILURECONDITIONS_FIELD_NUMBER: _ClassVar[int]
    SHAREID_FIELD_NUMBER: _ClassVar[int]
    CONSUMEDCAPACITY_FIELD_NUMBER: _ClassVar[int]
    SKIPNODEOPERATIONS_FIELD_NUMBER: _ClassVar[int]
    request: str
    driver: str
    pool: str
    device: str
    adminAccess: bool
    tolerations: _containers.RepeatedCompositeFieldContainer[DeviceToleration]
    bindingConditions: _containers.RepeatedScalarFieldContainer[str]
    bindingFailureConditions: _containers.RepeatedScalarFieldContainer[str]
    shareID: str
    consumedCapacity: _containers.MessageMap[str, _resource_quantity_pb2.Quantity]
    skipNodeOperations: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, request: _Optional[str] = ..., driver: _Optional[str] = ..., pool: _Optional[str] = ..., device: _Optional[str] = ..., adminAccess: _Optional[bool] = ..., tolerations: _Optional[_Iterable[_Union[DeviceToleration, _Mapping]]] = ..., bindingConditions: _Optional[_Iterable[str]] = ..., bindingFailureConditions: _Optional[_Iterable[str]] = ..., shareID: _Optional[str] = ..., consumedCapacity: _Optional[_Mapping[str, _resource_quantity_pb2.Quantity]] = ..., skipNodeOperations: _Optional[_Iterable[str]] = ...) -> None: ...

class DeviceSelector(_message.Message):
    __slots__ = ("cel",)
    CEL_FIELD_NUMBER: _ClassVar[int]
    cel: CELDeviceSelector
    def __init__(self, cel: _Optional[_Union[CELDeviceSelector, _Mapping]] = ...) -> None: ...

class DeviceSubRequest(_message.Message):
    __slots__ = ("name", "deviceClassName", "selectors", "allocationMode", "count", "tolerations", "capacity")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DEVICECLASSNAME_FIELD_NUMBER: _ClassVar[int]
    SELECTORS_FIELD_NUMBER: _ClassVar[int]
    ALLOCATIONMODE_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    TOLERATIONS_FIELD_NUMBER: _ClassVar[int]
    CAPACITY_FIELD_NUMBER: _ClassVar[int]
    name: str
    deviceClassName: str
    selectors: _containers.RepeatedCompositeFieldContainer[DeviceSelector]
    allocationMode: str
    count: int
    tolerations: _containers.RepeatedCompositeFieldContainer[DeviceToleration]
    capacity: CapacityRequirements
    def __init__(self, name: _Optional[str] = ..., deviceClassName: _Optional[str] = ..., selectors: _Optional[_Iterable[_Union[DeviceSelector, _Mapping]]] = ..., allocationMode: _Optional[str] = ..., count: _Optional[int] = ..., tolerations: _Optional[_Iterable[_Union[DeviceToleration, _Mapping]]] = ..., capacity: _Optional[_Union[CapacityRequirements, _Mapping]] = ...) -> None: ...

class DeviceTaint(_message.Message):
    __slots__ = ("key", "value", "effect", "timeAdded")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    EFFECT_FIELD_NUMBER: _ClassVar[int]
    TIMEADDED_FIELD_NUMBER: _ClassVar[int]
    key: str
    value: str
    effect: str
    timeAdded: _meta_v1_pb2.Time
    def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ..., effect: _Optional[str] = ..., timeAdded: _Optional[_Union[_meta_v1_pb2.Time, _Mapping]] = ...) -> None: ...

class DeviceToleration(_message.Message):
    __slots__ = ("key", "operator", "value", "effect", "tolerationSeconds")
    KEY_FIELD_NUMBER: _ClassVar[int]
    OPERATOR_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    EFFECT_FIELD_NUMBER: _ClassVar[int]
    TOLERATIONSECONDS_FIELD_NUMBER: _ClassVar[int]
    key: str
    operator: str
    value: str
    effect: str
    tolerationSeconds: int
    def __init__(self, key: _Optional[str] = ..., operator: _Optional[str] = ..., value: _Optional[str] = ..., effect: _Optional[str] = ..., tolerationSeconds: _Optional[int] = ...) -> None: ...

class ExactDeviceRequest(_message.Message):
    __slots__ = ("deviceClassName", "selectors", "allocationMode", "count", "adminAccess", "tolerations", "capacity")
    DEVICECLASSNAME_FIELD_NUMBER: _ClassVar[int]
    SELECTORS_FIELD_NUMBER: _ClassVar[int]
    ALLOCATIONMODE_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    ADMINACCESS_FIELD_NUMBER: _ClassVar[int]
    TOLERATIONS_FIELD_NUMBER: _ClassVar[int]
    CAPACITY_FIELD_NUMBER: _ClassVar[int]
    deviceClassName: str
    selectors: _containers.RepeatedCompositeFieldContainer[DeviceSelector]
    allocationMode: str
    count: int
    adminAccess: bool
    tolerations: _containers.RepeatedCompositeFieldContainer[DeviceToleration]
    capacity: CapacityRequirements
    def __init__(self, deviceClassName: _Optional[str] = ..., selectors: _Optional[_Iterable[_Union[DeviceSelector, _Mapping]]] = ..., allocationMode: _Optional[str] = ..., count: _Optional[int] = ..., adminAccess: _Optional[bool] = ..., tolerations: _Optional[_Iterable[_Union[DeviceToleration, _Mapping]]] = ..., capacity: _Optional[_Union[CapacityRequirements, _Mapping]] = ...) -> None: ...

class NetworkDeviceData(_message.Message):
    __slots__ = ("interfaceName", "ips", "hardwareAddress")
    INTERFACENAME_FIELD_NUMBER: _ClassVar[int]
    IPS_FIELD_NUMBER: _ClassVar[int]
    HARDWAREADDRESS_FIELD_NUMBER: _ClassVar[int]
    interfaceName: str
    ips: _containers.RepeatedScalarFieldContainer[str]
    hardwareAddress: str
    def __init__(self, interfaceName: _Optional[str] = ..., ips: _Optional[_Iterable[str]] = ..., hardwareAddress: _Optional[str] = ...) -> None: ...

class NodeAllocatableMapping(_message.Message):
    __slots__ = ("capacityKey", "capacityMultiplier", "deviceMultiplier")
    CAPACITYKEY_FIELD_NUMBER: _ClassVar[int]
    CAPACITYMULTIPLIER_FIELD_NUMBER: _ClassVar[int]
    DEVICEMULTIPLIER_FIELD_NUMBER: _ClassVar[int]
    capacityKey: str
    capacityMultiplier: _resource_quantity_pb2.Quantity
    deviceMultiplier: _resource_quantity_pb2.Quantity
    def __init__(self, capacityKey: _Optional[str] = ..., capacityMultiplier: _Optional[_Union[_resource_quantity_pb2.Quantity, _Mapping]] = ..., deviceMultiplier: _Optional[_Union[_resource_quantity_pb2.Quantity, _Mapping]] = ...) -> None: ...

class NodeAllocatableOverhead(_message.Message):
    __slots__ = ("perPod", "perContainer")
    PERPOD_FIELD_NUMBER: _ClassVar[int]
    PERCONTAINER_FIELD_NUMBER: _ClassVar[int]
    perPod: _resource_quantity_pb2.Quantity
    perContainer: _resource_quantity_pb2.Quantity
    def __init__(self, perPod: _Optional[_Union[_resource_quantity_pb2.Quantity, _Mapping]] = ..., perContainer: _Optional[_Union[_resource_quantity_pb2.Quantity, _Mapping]] = ...) -> None: ...

class NodeAllocatableResource(_message.Message):
    __slots__ = ("mapping", "overhead")
    MAPPING_FIELD_NUMBER: _ClassVar[int]
    OVERHEAD_FIELD_NUMBER: _ClassVar[int]
    mapping: NodeAllocatableMapping
    overhead: NodeAllocatableOverhead
    def __init__(self, mapping: _Optional[_Union[NodeAllocatableMapping, _Mapping]] = ..., overhead: _Optional[_Union[NodeAllocatableOverhead, _Mapping]] = ...) -> None: ...

class OpaqueDeviceConfiguration(_message.Message):
    __slots__ = ("driver", "parameters")
    DRIVER_FIELD_NUMBER: _ClassVar[int]
    PARAMETERS_FIELD_NUMBER: _ClassVar[int]
    driver: str
    parameters: _runtime_pb2.RawExtension
    def __init__(self, driver: _Optional[str] = ..., parameters: _Optional[_Union[_runtime_pb2.RawExtension, _Mapping]] = ...) -> None: ...

class ResourceClaim(_message.Message):
    __slots__ = ("metadata", "spec", "status")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    metadata: _meta_v1_pb2.ObjectMeta
    spec: ResourceClaimSpec
    status: ResourceClaimStatus
    def __init__(self, metadata: _Optional[_Union[_meta_v1_pb2.ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[ResourceClaimSpec, _Mapping]] = ..., status: _Optional[_Union[ResourceClaimStatus, _Mapping]] = ...) -> None: ...

class ResourceClaimConsumerReference(_message.Message):
    __slots__ = ("apiGroup", "resource", "name", "uid")
    APIGROUP_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    UID_FIELD_NUMBER: _ClassVar[int]
    apiGroup: str
    resource: str
    name: str
    uid: str
    def __init__(self, apiGroup: _Optional[str] = ..., resource: _Optional[str] = ..., name: _Optional[str] = ..., uid: _Optional[str] = ...) -> None: ...

class ResourceClaimList(_message.Message):
    __slots__ = ("metadata", "items")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    metadata: _meta_v1_pb2.ListMeta
    items: _containers.RepeatedCompositeFieldContainer[ResourceClaim]
    def __init__(self, metadata: _Optional[_Union[_meta_v1_pb2.ListMeta, _Mapping]] = ..., items: _Optional[_Iterable[_Union[ResourceClaim, _Mapping]]] = ...) -> None: ...

class ResourceClaimSpec(_message.Message):
    __slots__ = ("devices",)
    DEVICES_FIELD_NUMBER: _ClassVar[int]
    devices: DeviceClaim
    def __init__(self, devices: _Optional[_Union[DeviceClaim, _Mapping]] = ...) -> None: ...

class ResourceClaimStatus(_message.Message):
    __slots__ = ("allocation", "reservedFor", "devices")
    ALLOCATION_FIELD_NUMBER: _ClassVar[int]
    RESERVEDFOR_FIELD_NUMBER: _ClassVar[int]
    DEVICES_FIELD_NUMBER: _ClassVar[int]
    allocation: AllocationResult
    reservedFor: _containers.RepeatedCompositeFieldContainer[ResourceClaimConsumerReference]
    devices: _containers.RepeatedCompositeFieldContainer[AllocatedDeviceStatus]
    def __init__(self, allocation: _Optional[_Union[AllocationResult, _Mapping]] = ..., reservedFor: _Optional[_Iterable[_Union[ResourceClaimConsumerReference, _Mapping]]] = ..., devices: _Optional[_Iterable[_Union[AllocatedDeviceStatus, _Mapping]]] = ...) -> None: ...

class ResourceClaimTemplate(_message.Message):
    __slots__ = ("metadata", "spec")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    metadata: _meta_v1_pb2.ObjectMeta
    spec: ResourceClaimTemplateSpec
    def __init__(self, metadata: _Optional[_Union[_meta_v1_pb2.ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[ResourceClaimTemplateSpec, _Mapping]] = ...) -> None: ...

class ResourceClaimTemplateList(_message.Message):
    __slots__ = ("metadata", "items")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    metadata: _meta_v1_pb2.ListMeta
    items: _containers.RepeatedCompositeFieldContainer[ResourceClaimTemplate]
    def __init__(self, metadata: _Optional[_Union[_meta_v1_pb2.ListMeta, _Mapping]] = ..., items: _Optional[_Iterable[_Union[ResourceClaimTemplate, _Mapping]]] = ...) -> None: ...

class ResourceClaimTemplateSpec(_message.Message):
    __slots__ = ("metadata", "spec")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    metadata: _meta_v1_pb2.ObjectMeta
    spec: ResourceClaimSpec
    def __init__(self, metadata: _Optional[_Union[_meta_v1_pb2.ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[ResourceClaimSpec, _Mapping]] = ...) -> None: ...

class ResourcePool(_message.Message):
    __slots__ = ("name", "generation", "resourceSliceCount")
    NAME_FIELD_NUMBER: _ClassVar[int]
    GENERATION_FIELD_NUMBER: _ClassVar[int]
    RESOURCESLICECOUNT_FIELD_NUMBER: _ClassVar[int]
    name: str
    generation: int
    resourceSliceCount: int
    def __init__(self, name: _Optional[str] = ..., generation: _Optional[int] = ..., resourceSliceCount: _Optional[int] = ...) -> None: ...

class ResourceSlice(_message.Message):
    __slots__ = ("metadata", "spec")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    metadata: _meta_v1_pb2.ObjectMeta
    spec: ResourceSliceSpec
    def __init__(self, metadata: _Optional[_Union[_meta_v1_pb2.ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[ResourceSliceSpec, _Mapping]] = ...) -> None: ...

class ResourceSliceList(_message.Message):
    __slots__ = ("metadata", "items")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    metadata: _meta_v1_pb2.ListMeta
    items: _containers.RepeatedCompositeFieldContainer[ResourceSlice]
    def __init__(self, metadata: _Optional[_Union[_meta_v1_pb2.ListMeta, _Mapping]] = ..., items: _Optional[_Iterable[_Union[ResourceSlice, _Mapping]]] = ...) -> None: ...

class ResourceSliceSpec(_message.Message):
    __slots__ = ("driver", "pool", "nodeName", "nodeSelector", "allNodes", "devices", "perDeviceNodeSelection", "sharedCounters", "skipNodeOperations")
    DRIVER_FIELD_NUMBER: _ClassVar[int]
    POOL_FIELD_NUMBER: _ClassVar[int]
    NODENAME_FIELD_NUMBER: _ClassVar[int]
    NODESELECTOR_FIELD_NUMBER: _ClassVar[int]
    ALLNODES_FIELD_NUMBER: _ClassVar[int]
    DEVICES_FIELD_NUMBER: _ClassVar[int]
    PERDEVICENODESELECTION_FIELD_NUMBER: _ClassVar[int]
    SHAREDCOUNTERS_FIELD_NUMBER: _ClassVar[int]
    SKIPNODEOPERATIONS_FIELD_NUMBER: _ClassVar[int]
    driver: str
    pool: ResourcePool
    nodeName: str
    nodeSelector: _core_v1_pb2.NodeSelector
    allNodes: bool
    devices: _containers.RepeatedCompositeFieldContainer[Device]
    perDeviceNodeSelection: bool
    sharedCounters: _containers.RepeatedCompositeFieldContainer[CounterSet]
    skipNodeOperations: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, driver: _Optional[str] = ..., pool: _Optional[_Union[ResourcePool, _Mapping]] = ..., nodeName: _Optional[str] = ..., nodeSelector: _Optional[_Union[_core_v1_pb2.NodeSelector, _Mapping]] = ..., allNodes: _Optional[bool] = ..., devices: _Optional[_Iterable[_Union[Device, _Mapping]]] = ..., perDeviceNodeSelection: _Optional[bool] = ..., sharedCounters: _Optional[_Iterable[_Union[CounterSet, _Mapping]]] = ..., skipNodeOperations: _Optional[_Iterable[str]] = ...) -> None: ...
