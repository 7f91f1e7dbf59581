//! Connecting to a CRI endpoint (being built).
