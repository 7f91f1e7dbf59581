//! Generated property scenarios per second against the in-memory mock (being built).

fn main() {}
