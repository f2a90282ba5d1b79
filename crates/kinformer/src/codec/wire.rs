//! The wire formats: which encoding lists and watches ask the API server for, and which
//! the decoders read.

/// Which encoding lists and watches ask the API server for.
///
/// Whatever is asked, the response's `Content-Type` decides how it is decoded, so a server
/// that answers JSON to a protobuf request is read all the same.
///
/// ```
/// use kinformer::kube::Wire;
///
/// assert_eq!(Wire::default(), Wire::Protobuf);
/// assert_eq!("json".parse::<Wire>(), Ok(Wire::Json));
/// assert!("yaml".parse::<Wire>().is_err());
/// assert_eq!(Wire::Protobuf.to_string(), "protobuf");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Wire {
    /// JSON for everything.
    Json,
    /// Kubernetes protobuf for built-in kinds (the core group and the other Kubernetes API
    /// groups), as Kubernetes' own controllers do; JSON for custom resources and
    /// metadata-only lists (the default). Without the `protobuf` feature, JSON.
    #[default]
    Protobuf,
}

impl std::fmt::Display for Wire {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Wire::Json => "json",
            Wire::Protobuf => "protobuf",
        })
    }
}

impl std::str::FromStr for Wire {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "json" => Ok(Wire::Json),
            "protobuf" => Ok(Wire::Protobuf),
            other => Err(format!("unknown wire format {other:?} (json or protobuf)")),
        }
    }
}
