//! Container lifecycle hooks, run as today's kubelet runs them (`handlerRunner.Run`,
//! pkg/kubelet/lifecycle/handlers.go): an exec hook through the runtime's ExecSync, an HTTP hook
//! as a GET to the pod's IP (or the hook's own host) from the node, a sleep hook by waiting. The
//! kubelet runs PostStart after StartContainer and PreStop before StopContainer; `sync_pod`
//! places the calls, this file only runs one handler.

use std::time::Duration;

use hyper_util::rt::TokioIo;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::k8s;
use super::sandbox_config::format_pod;
use crate::manager::KubeGenericRuntimeManager;

/// The User-Agent the kubelet's lifecycle HTTP requests carry (`kube-lifecycle/<major>.<minor>`
/// of the kubelet; the harness plays v1.34).
const LIFECYCLE_USER_AGENT: &str = "kube-lifecycle/1.34";

/// How long an HTTP hook may take. The kubelet's lifecycle HTTP client has no timeout of its own
/// (a PreStop is bounded by the grace period, a PostStart by nothing); the harness bounds it so a
/// server that never answers cannot hang a run.
const HTTP_HOOK_TIMEOUT: Duration = Duration::from_secs(60);

impl KubeGenericRuntimeManager {
    /// Runs one lifecycle handler for the container `id` of `pod`; a failure answers the message
    /// the kubelet records. Ports `handlerRunner.Run`: exec through ExecSync with no timeout of
    /// its own (a non-zero exit fails it), an HTTP GET that fails only when no response comes
    /// (any status code passes), a sleep, and anything else (a `tcpSocket`) refused.
    pub(crate) async fn run_lifecycle_handler(
        &self,
        id: &str,
        pod: &k8s::Pod,
        container: &k8s::Container,
        handler: &k8s::LifecycleHandler,
    ) -> Result<(), String> {
        let who = format!(
            "Container {:?} in Pod {:?}",
            container.name,
            format_pod(pod)
        );
        if let Some(exec) = &handler.exec {
            let command = exec.command.clone().unwrap_or_default();
            return self
                .run_exec_handler(id, command.clone())
                .await
                .map_err(|(error, output)| {
                    format!(
                        "Exec lifecycle hook ([{}]) for {who} failed - error: {error}, message: {output:?}",
                        command.join(" ")
                    )
                });
        }
        if let Some(http_get) = &handler.http_get {
            return self
                .run_http_handler(pod, container, http_get)
                .await
                .map_err(|error| {
                    format!(
                        "HTTP lifecycle hook ({}) for {who} failed - error: {error}",
                        http_get.path.as_deref().unwrap_or_default()
                    )
                });
        }
        if let Some(sleep) = &handler.sleep {
            tokio::time::sleep(Duration::from_secs(
                u64::try_from(sleep.seconds).unwrap_or(0),
            ))
            .await;
            return Ok(());
        }
        Err("Cannot run handler: invalid handler: neither exec, httpGet nor sleep".to_owned())
    }

    /// ExecSync with no timeout, as the kubelet's `RunInContainer(..., 0)`: an RPC failure or a
    /// non-zero exit answers the error and the command's output (stdout, then stderr).
    async fn run_exec_handler(
        &self,
        id: &str,
        command: Vec<String>,
    ) -> Result<(), (String, String)> {
        let joined = command.join(" ");
        let answer = self
            .client()
            .exec_sync(id, command, Duration::ZERO)
            .await
            .map_err(|err| (err.to_string(), String::new()))?;
        if answer.exit_code == 0 {
            return Ok(());
        }
        let stderr = String::from_utf8_lossy(&answer.stderr).into_owned();
        let output = format!("{}{stderr}", String::from_utf8_lossy(&answer.stdout));
        Err((
            format!(
                "command '{joined}' exited with {}: {stderr}",
                answer.exit_code
            ),
            output,
        ))
    }

    /// One GET to the hook's URL, from the node (the runtime's network namespace): the hook's
    /// host, or else the pod's IP as GetPodStatus reads it; the port by number or by the name of
    /// one of the container's ports. Only the scheme
    /// HTTP is spoken: the harness carries no TLS client, so an HTTPS hook fails here (the kubelet
    /// would skip verification and fall back to HTTP on an HTTP answer).
    async fn run_http_handler(
        &self,
        pod: &k8s::Pod,
        container: &k8s::Container,
        action: &k8s::HTTPGetAction,
    ) -> Result<(), String> {
        // As the kubelet: the pod's status is read only when the hook names no host.
        let (host, pod_ip) = match action.host.as_deref().filter(|h| !h.is_empty()) {
            Some(host) => (host.to_owned(), None),
            None => {
                let status = self
                    .get_pod_status(
                        super::pod::uid(pod),
                        super::pod::name(pod),
                        super::pod::namespace(pod),
                    )
                    .await
                    .map_err(|err| err.to_string())?;
                if status.ip.is_empty() {
                    return Err("failed to find networking container".to_owned());
                }
                (status.ip.clone(), Some(status.ip))
            }
        };
        // The harness sends traffic only to the machine itself: the pod's own address or a
        // loopback one, never a name to resolve (the kubelet would go wherever the hook says).
        let ip: std::net::IpAddr = host
            .parse()
            .ok()
            .filter(|ip: &std::net::IpAddr| ip.is_loopback() || pod_ip.is_some())
            .ok_or_else(|| {
                format!("host {host:?} is neither the pod's IP nor a loopback address: the harness does not reach it")
            })?;
        let port = resolve_container_port(&action.port, container)?;
        let scheme = action
            .scheme
            .as_deref()
            .unwrap_or("HTTP")
            .to_ascii_lowercase();
        if scheme != "http" {
            return Err(format!("scheme {scheme:?} is not supported by the harness"));
        }
        let authority = join_host_port(&host, port);
        let path = match action.path.as_deref().unwrap_or_default() {
            "" => "/".to_owned(),
            p if p.starts_with('/') => p.to_owned(),
            p => format!("/{p}"),
        };
        let mut request = http::Request::get(path.as_str());
        let headers = action.http_headers.iter().flatten();
        let has = |name: &str| {
            action
                .http_headers
                .iter()
                .flatten()
                .any(|h| h.name.eq_ignore_ascii_case(name))
        };
        if !has("host") {
            request = request.header(http::header::HOST, authority.as_str());
        }
        if !has("user-agent") {
            request = request.header(http::header::USER_AGENT, LIFECYCLE_USER_AGENT);
        }
        if !has("accept") {
            request = request.header(http::header::ACCEPT, "*/*");
        }
        for header in headers {
            request = request.header(header.name.as_str(), header.value.as_str());
        }
        let request = request.body(String::new()).map_err(|err| err.to_string())?;
        let get = async {
            let addr = std::net::SocketAddr::new(ip, port);
            let stream = crate::streaming::tcp_from_runtime(self.client().endpoint(), addr)
                .await
                .map_err(|err| format!("Get \"http://{authority}{path}\": {err}"))?;
            let (mut sender, connection) =
                hyper::client::conn::http1::handshake(TokioIo::new(stream))
                    .await
                    .map_err(|err| err.to_string())?;
            let driver = tokio::spawn(connection);
            let answer = sender.send_request(request).await;
            driver.abort();
            // Any response passes, whatever its status: the kubelet discards it unread.
            answer.map(drop).map_err(|err| err.to_string())
        };
        tokio::time::timeout(HTTP_HOOK_TIMEOUT, get)
            .await
            .map_err(|_| format!("no answer from {authority} in {HTTP_HOOK_TIMEOUT:?}"))?
    }
}

/// The port a hook or probe names: a number, or the name of one of the container's ports, or a
/// number written as a string; 1 to 65535. Ports `ResolveContainerPort`.
pub(crate) fn resolve_container_port(
    port: &IntOrString,
    container: &k8s::Container,
) -> Result<u16, String> {
    let number = match port {
        IntOrString::Int(n) => i64::from(*n),
        IntOrString::String(name) => {
            let named = container
                .ports
                .iter()
                .flatten()
                .find(|p| p.name.as_deref() == Some(name.as_str()))
                .map(|p| i64::from(p.container_port));
            match named {
                Some(n) => n,
                None => name
                    .parse::<i64>()
                    .map_err(|_| format!("couldn't find port: {name:?} in {:?}", container.name))?,
            }
        }
    };
    u16::try_from(number)
        .ok()
        .filter(|&p| p > 0)
        .ok_or_else(|| format!("invalid port number: {number}"))
}

/// `host:port`, with brackets around an IPv6 host (Go's `net.JoinHostPort`).
fn join_host_port(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn with_ports(ports: &[(&str, i32)]) -> k8s::Container {
        k8s::Container {
            name: "app".to_owned(),
            ports: Some(
                ports
                    .iter()
                    .map(|(name, port)| k8s::ContainerPort {
                        name: Some((*name).to_owned()),
                        container_port: *port,
                        ..Default::default()
                    })
                    .collect(),
            ),
            ..Default::default()
        }
    }

    #[rstest]
    #[case::a_number(IntOrString::Int(8080), Ok(8080))]
    #[case::a_port_name(IntOrString::String("web".to_owned()), Ok(80))]
    #[case::a_number_as_a_string(IntOrString::String("81".to_owned()), Ok(81))]
    #[case::an_unknown_name(
        IntOrString::String("admin".to_owned()),
        Err("couldn't find port: \"admin\" in \"app\"".to_owned())
    )]
    #[case::zero(IntOrString::Int(0), Err("invalid port number: 0".to_owned()))]
    #[case::too_high(IntOrString::Int(65_536), Err("invalid port number: 65536".to_owned()))]
    fn a_hook_port_resolves_by_number_or_container_port_name(
        #[case] port: IntOrString,
        #[case] expected: Result<u16, String>,
    ) {
        assert_eq!(
            resolve_container_port(&port, &with_ports(&[("web", 80)])),
            expected
        );
    }

    #[rstest]
    #[case::ipv4("10.0.0.1", "10.0.0.1:80")]
    #[case::ipv6("fd00::1", "[fd00::1]:80")]
    #[case::a_name("testHost.com", "testHost.com:80")]
    fn host_and_port_join_as_go_does(#[case] host: &str, #[case] expected: &str) {
        assert_eq!(join_host_port(host, 80), expected);
    }
}
