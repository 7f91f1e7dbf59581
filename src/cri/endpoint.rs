//! Endpoint parsing and resolution (being built).
