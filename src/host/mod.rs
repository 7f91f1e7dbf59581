//! Facts about the host the harness runs on, read without a runtime: low in the house, so the
//! runner, the steps and the CLI can all ask.

pub mod mounts;
pub mod processes;
