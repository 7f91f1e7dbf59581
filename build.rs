//! Compiles the CRI schema and the mock's control schema with a vendored protoc, so a fresh
//! machine needs nothing but cargo.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut config = tonic_prost_build::Config::new();
    config.protoc_executable(protoc_bin_vendored::protoc_bin_path()?);
    // Ordered maps keep labels and annotations in a stable order, so snapshots are stable.
    config.btree_map(["."]);
    tonic_prost_build::configure().compile_with_config(
        config,
        &[
            "proto/runtime/v1/api.proto",
            "proto/criharness/mock/v1/control.proto",
        ],
        &["proto"],
    )?;
    Ok(())
}
