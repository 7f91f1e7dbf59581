//! Flags shared by the subcommands that talk to a runtime (being built).
