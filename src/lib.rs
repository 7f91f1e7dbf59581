//! cri-harness: a conformance harness for Kubernetes CRI runtimes.
//!
//! Data flows one way: a suite file ([`suite`]) is run by the [`runner`], which drives the
//! [`manager`] (a port of the kubelet's kuberuntime manager) through the CRI client ([`cri`]) to
//! a runtime: a real one, or the built-in [`mock`]. Results flow back into the [`report`].

#![cfg_attr(not(test), forbid(unsafe_code))]

pub mod bench;
pub mod cli;
pub mod contract;
pub mod cri;
pub mod errors;
pub mod fuzz;
pub mod host;
pub mod images;
pub mod manager;
pub mod mock;
pub mod observe;
pub mod prop;
pub mod report;
pub mod runner;
pub mod streaming;
pub mod suite;
pub mod timing;
pub mod world;
