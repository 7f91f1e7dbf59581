//! The built-in mock CRI runtime (being built).

/// Generated code for the mock's control service (`proto/criharness/mock/v1/control.proto`).
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod control_api {
    tonic::include_proto!("criharness.mock.v1");
}
