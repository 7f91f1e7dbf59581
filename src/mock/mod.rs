//! The built-in mock CRI runtime: a real gRPC server (unix socket, or an in-memory duplex in
//! tests) whose RuntimeService and ImageService answer the way containerd 1.6 does where the
//! CRI contract leaves room, plus a control service that lets a suite ask for misbehaviour.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

mod call_log;
mod clock;
mod control;
mod dispatch;
mod error;
mod faults;
mod image_service;
mod runtime_service;
mod server;
mod state;
mod summary;

pub use error::MockError;
pub use server::MockServer;

use crate::cri::v1;

/// The mock's control service (`proto/criharness/mock/v1/control.proto`), generated.
pub use crate::cri::generated::criharness::mock::v1 as control_api;
