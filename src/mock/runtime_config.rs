//! RuntimeConfig on the mock: the cgroup driver it reports, for good. It answers cgroupfs, the
//! driver containerd's default configuration (`SystemdCgroup = false`) uses, or, under the
//! other-runtime profile, systemd, CRI-O's default.

use super::error::RpcError;
use super::{Defect, Freedom, Inner, MockRuntime};
use crate::cri::v1;

pub(crate) fn runtime_config(
    inner: &mut Inner,
    _request: v1::RuntimeConfigRequest,
) -> Result<v1::RuntimeConfigResponse, RpcError> {
    if MockRuntime::has(inner, Defect::RuntimeConfigWithoutLinux) {
        return Ok(v1::RuntimeConfigResponse::default());
    }
    Ok(v1::RuntimeConfigResponse {
        linux: Some(v1::LinuxRuntimeConfiguration {
            cgroup_driver: if MockRuntime::takes(inner, Freedom::CgroupDriverSystemd) {
                v1::CgroupDriver::Systemd as i32
            } else {
                v1::CgroupDriver::Cgroupfs as i32
            },
        }),
    })
}
