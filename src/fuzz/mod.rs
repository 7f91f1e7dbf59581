//! Contract fuzzing: random sequences of CRI calls on a runtime, each answer and the runtime's
//! listed state checked against a stateful model of the contract ([`model`]) by clause; a
//! failure is shrunk to the fewest calls that still break the clause and printed as a suite
//! case ([`mod@print`]) that `cri-harness run --suites` replays. `cri-harness fuzz` drives it.

pub mod model;
pub mod ops;
pub mod print;
pub mod run;

pub use run::{fuzz, Options, Report, Where};
