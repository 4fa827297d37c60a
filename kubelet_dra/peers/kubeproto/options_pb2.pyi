from google.protobuf import descriptor_pb2 as _descriptor_pb2
from google.protobuf import descriptor as _descriptor
from typing import ClassVar as _ClassVar

DESCRIPTOR: _descriptor.FileDescriptor
INLINE_FIELD_NUMBER: _ClassVar[int]
inline: _descriptor.FieldDescriptor
NULLABLE_FIELD_NUMBER: _ClassVar[int]
nullable: _descriptor.FieldDescriptor
