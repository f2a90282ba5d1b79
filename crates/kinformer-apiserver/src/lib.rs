//! An embedded, in-memory Kubernetes API server for development and tests.
