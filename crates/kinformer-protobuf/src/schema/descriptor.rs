//! The parts of `google/protobuf/descriptor.proto` the schema is built from: names, field
//! numbers, labels, types and the map-entry option. Decoding only these (prost skips the
//! other fields) allocates less than half of what the full descriptor types would, once per
//! process, on the thread that builds the schema.

/// `FileDescriptorSet`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct FileDescriptorSet {
    #[prost(message, repeated, tag = "1")]
    pub file: Vec<FileDescriptorProto>,
}

/// `FileDescriptorProto`: its package and top-level messages.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct FileDescriptorProto {
    #[prost(string, optional, tag = "2")]
    pub package: Option<String>,
    #[prost(message, repeated, tag = "4")]
    pub message_type: Vec<DescriptorProto>,
}

/// `DescriptorProto`: a message.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct DescriptorProto {
    #[prost(string, optional, tag = "1")]
    pub name: Option<String>,
    #[prost(message, repeated, tag = "2")]
    pub field: Vec<FieldDescriptorProto>,
    #[prost(message, repeated, tag = "3")]
    pub nested_type: Vec<DescriptorProto>,
    #[prost(message, optional, tag = "7")]
    pub options: Option<MessageOptions>,
}

/// `MessageOptions`: whether the message is a map's entry.
#[derive(Clone, Copy, PartialEq, prost::Message)]
pub(crate) struct MessageOptions {
    #[prost(bool, optional, tag = "7")]
    pub map_entry: Option<bool>,
}

/// `FieldDescriptorProto`: one field.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct FieldDescriptorProto {
    #[prost(string, optional, tag = "1")]
    pub name: Option<String>,
    #[prost(int32, optional, tag = "3")]
    pub number: Option<i32>,
    #[prost(enumeration = "Label", optional, tag = "4")]
    pub label: Option<i32>,
    #[prost(enumeration = "Type", optional, tag = "5")]
    pub r#type: Option<i32>,
    #[prost(string, optional, tag = "6")]
    pub type_name: Option<String>,
}

/// `FieldDescriptorProto.Label`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub(crate) enum Label {
    Optional = 1,
    Required = 2,
    Repeated = 3,
}

/// `FieldDescriptorProto.Type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub(crate) enum Type {
    Double = 1,
    Float = 2,
    Int64 = 3,
    Uint64 = 4,
    Int32 = 5,
    Fixed64 = 6,
    Fixed32 = 7,
    Bool = 8,
    String = 9,
    Group = 10,
    Message = 11,
    Bytes = 12,
    Uint32 = 13,
    Enum = 14,
    Sfixed32 = 15,
    Sfixed64 = 16,
    Sint32 = 17,
    Sint64 = 18,
}
