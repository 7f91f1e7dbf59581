//! Compiles the CRI schema and the mock's control schema with a vendored protoc, so a fresh
//! machine needs nothing but cargo.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protoc = protoc_bin_vendored::protoc_bin_path()?;
    let mut config = tonic_prost_build::Config::new();
    config.protoc_executable(protoc);
    // Ordered maps keep labels and annotations in a stable order, so snapshots are stable.
    config.btree_map(["."]);
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_with_config(
            config,
            &[
                "proto/runtime/v1/api.proto",
                "proto/criharness/mock/v1/control.proto",
            ],
            &["proto"],
        )?;
    Ok(())
}
