//! The `info` map of a verbose Status answer (what `crictl info` prints), with the keys
//! containerd 1.6 answers and each value a JSON document in containerd's shape: its CRI plugin
//! config, the CNI config it loaded, the Go version it was built with and the CNI load status.
//! The values are those of a stock containerd 1.6 with the default bridge network on
//! 10.88.0.0/16, the range the mock hands pod IPs from.

use std::collections::BTreeMap;

use serde_json::{json, Value};

/// Where containerd keeps its state and the CNI plugins; the mock runs none of them.
const CONTAINERD_ROOT: &str = "/var/lib/containerd";
const CONTAINERD_STATE: &str = "/run/containerd";
const CNI_BIN_DIR: &str = "/opt/cni/bin";
const CNI_CONF_DIR: &str = "/etc/cni/net.d";
/// The conflist containerd's install guide drops in the CNI conf dir.
const BRIDGE_CONFLIST: &str = r#"{
  "cniVersion": "1.0.0",
  "name": "containerd-net",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "cni0",
      "isGateway": true,
      "ipMasq": true,
      "promiscMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "10.88.0.0/16"}]],
        "routes": [{"dst": "0.0.0.0/0"}]
      }
    },
    {
      "type": "portmap",
      "capabilities": {"portMappings": true}
    }
  ]
}"#;
/// go-cni's built-in loopback network.
const LOOPBACK_CONFLIST: &str =
    "{\n\"cniVersion\": \"0.3.1\",\n\"name\": \"cni-loopback\",\n\"plugins\": [{\n  \"type\": \"loopback\"\n}]\n}";

/// Everything a verbose Status answers in `info`.
pub(crate) fn info() -> BTreeMap<String, String> {
    // The CNI monitor of the default network reports per name and as the overall status.
    [
        ("config", config().to_string()),
        ("cniconfig", cni_config().to_string()),
        // Go 1.19 built containerd 1.6.20 for Debian 12, the release the mock answers like.
        ("golang", Value::from("go1.19.8").to_string()),
        ("lastCNILoadStatus", "OK".to_owned()),
        ("lastCNILoadStatus.default", "OK".to_owned()),
    ]
    .into_iter()
    .map(|(key, value)| (key.to_owned(), value))
    .collect()
}

/// A runtime of the CRI plugin config, as containerd marshals it.
fn runtime(runtime_type: &str, options: Value) -> Value {
    json!({
        "runtimeType": runtime_type,
        "runtimePath": "",
        "runtimeEngine": "",
        "PodAnnotations": null,
        "ContainerAnnotations": null,
        "runtimeRoot": "",
        "options": options,
        "privileged_without_host_devices": false,
        "baseRuntimeSpec": "",
        "cniConfDir": "",
        "cniMaxConfNum": 0,
    })
}

/// containerd 1.6's CRI plugin config with its defaults (`containerd config default`).
fn config() -> Value {
    let cri_root = format!("{CONTAINERD_ROOT}/io.containerd.grpc.v1.cri");
    let cri_state = format!("{CONTAINERD_STATE}/io.containerd.grpc.v1.cri");
    json!({
        "containerd": {
            "snapshotter": "overlayfs",
            "defaultRuntimeName": "runc",
            "defaultRuntime": runtime("", json!(null)),
            "untrustedWorkloadRuntime": runtime("", json!(null)),
            "runtimes": {
                "runc": runtime("io.containerd.runc.v2", json!({
                    "BinaryName": "",
                    "CriuImagePath": "",
                    "CriuPath": "",
                    "CriuWorkPath": "",
                    "IoGid": 0,
                    "IoUid": 0,
                    "NoNewKeyring": false,
                    "NoPivotRoot": false,
                    "Root": "",
                    "ShimCgroup": "",
                    "SystemdCgroup": false,
                })),
            },
            "noPivot": false,
            "disableSnapshotAnnotations": true,
            "discardUnpackedLayers": false,
            "ignoreRdtNotEnabledErrors": false,
        },
        "cni": {
            "binDir": CNI_BIN_DIR,
            "confDir": CNI_CONF_DIR,
            "maxConfNum": 1,
            "confTemplate": "",
            "ipPref": "",
        },
        "registry": {
            "configPath": "",
            "mirrors": null,
            "configs": null,
            "auths": null,
            "headers": null,
        },
        "imageDecryption": {"keyModel": "node"},
        "disableTCPService": true,
        "streamServerAddress": "127.0.0.1",
        "streamServerPort": "0",
        "streamIdleTimeout": "4h0m0s",
        "enableSelinux": false,
        "selinuxCategoryRange": 1024,
        "sandboxImage": "registry.k8s.io/pause:3.6",
        "statsCollectPeriod": 10,
        "systemdCgroup": false,
        "enableTLSStreaming": false,
        "x509KeyPairStreaming": {"tlsCertFile": "", "tlsKeyFile": ""},
        "maxContainerLogSize": 16384,
        "disableCgroup": false,
        "disableApparmor": false,
        "restrictOOMScoreAdj": false,
        "maxConcurrentDownloads": 3,
        "disableProcMount": false,
        "unsetSeccompProfile": "",
        "tolerateMissingHugetlbController": true,
        "disableHugetlbController": true,
        "device_ownership_from_security_context": false,
        "ignoreImageDefinedVolumes": false,
        "netnsMountsUnderStateDir": false,
        "enableUnprivilegedPorts": false,
        "enableUnprivilegedICMP": false,
        "containerdRootDir": CONTAINERD_ROOT,
        "containerdEndpoint": format!("{CONTAINERD_STATE}/containerd.sock"),
        "rootDir": cri_root,
        "stateDir": cri_state,
    })
}

/// One network of go-cni's loaded config: each plugin's parsed conf and source, the list's.
fn network(source: &str, interface: &str) -> Value {
    let list: Value = serde_json::from_str(source).unwrap_or(Value::Null);
    let version = list["cniVersion"].clone();
    let plugins: Vec<Value> = list["plugins"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|plugin| {
            // go-cni parses each plugin into libcni's NetConf: its own fields, with `ipam` and
            // `dns` always present.
            let mut network = json!({
                "type": plugin["type"],
                "ipam": {},
                "dns": {},
            });
            if let Some(capabilities) = plugin.get("capabilities") {
                network["capabilities"] = capabilities.clone();
            }
            if let Some(ipam) = plugin["ipam"]["type"].as_str() {
                network["ipam"] = json!({"type": ipam});
            }
            json!({"Network": network, "Source": plugin.to_string()})
        })
        .collect();
    json!({
        "Config": {
            "Name": list["name"],
            "CNIVersion": version,
            "Plugins": plugins,
            "Source": source,
        },
        "IFName": interface,
    })
}

/// go-cni's view of the CNI config: the loopback network and the default bridge one.
fn cni_config() -> Value {
    json!({
        "PluginDirs": [CNI_BIN_DIR],
        "PluginConfDir": CNI_CONF_DIR,
        "PluginMaxConfNum": 1,
        "Prefix": "eth",
        "Networks": [
            network(LOOPBACK_CONFLIST, "lo"),
            network(BRIDGE_CONFLIST, "eth0"),
        ],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_json_valued_key_parses_and_the_load_status_is_ok() {
        let info = info();
        for key in ["config", "cniconfig", "golang"] {
            let value = info.get(key).map(String::as_str).unwrap_or_default();
            assert!(
                serde_json::from_str::<Value>(value).is_ok(),
                "{key}: {value}"
            );
        }
        assert_eq!(info["lastCNILoadStatus"], "OK");
    }

    #[test]
    fn the_cni_config_names_the_bridge_network_on_eth0_after_loopback() {
        let cni = cni_config();
        let networks: Vec<(&str, &str)> = cni["Networks"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|n| {
                (
                    n["Config"]["Name"].as_str().unwrap_or_default(),
                    n["IFName"].as_str().unwrap_or_default(),
                )
            })
            .collect();
        assert_eq!(
            networks,
            [("cni-loopback", "lo"), ("containerd-net", "eth0")]
        );
        let bridge = &cni["Networks"][1]["Config"]["Plugins"][0]["Network"];
        assert_eq!(
            (&bridge["type"], &bridge["ipam"]["type"]),
            (&json!("bridge"), &json!("host-local"))
        );
    }
}
