//! The built-in mock CRI runtime (being built).

/// The mock's control service (`proto/criharness/mock/v1/control.proto`), generated.
pub use crate::cri::generated::criharness::mock::v1 as control_api;
