//! `connect`: a TCP connection from the harness to a pod's IP or to a host port, the way a
//! client on the node (or in another pod) reaches a pod: it sends the given bytes and checks the
//! answer, retrying while the server starts, or checks that the connection is refused. It
//! connects only to 127.0.0.1 or a pod's own address, from the node's network namespace (the
//! runtime's) or from another pod's.

mod netns;

use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use self::netns::Place;
// How long a connection may take to answer as expected defaults as every bounded step's does.
use super::wait_container::{default_within, is_default_within};
use super::{is_default, CheckError, Kind, Scope, StepDef, TextExpect};
use crate::cri::Endpoint;
use crate::world::{mismatch, StepError, World};

/// Pause between tries: short, so a server that comes up is found at once.
const RETRY: Duration = Duration::from_millis(25);
/// Longest wait for one handshake, so a dropped packet costs one try, not the budget.
const HANDSHAKE: Duration = Duration::from_secs(2);
/// The most of an answer that is read.
const MAX_ANSWER: usize = 64 * 1024;

/// `connect`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `connect` step: `to`, `from`, `send`, `within_ms`, `expect`"
)]
pub struct Connect {
    /// Where to connect.
    pub to: ConnectTo,
    /// Where the connection starts; the node (the runtime's network namespace) by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<ConnectFrom>,
    /// Bytes to send once connected (e.g. `"GET / HTTP/1.0\r\n\r\n"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send: Option<String>,
    /// How long to keep trying until the expectation holds, in milliseconds.
    #[serde(default = "default_within", skip_serializing_if = "is_default_within")]
    pub within_ms: u64,
    /// Expectations; without any, the connection must be accepted.
    #[serde(default, skip_serializing_if = "is_default")]
    pub expect: ConnectExpect,
}

/// A connection's destination: a sandbox's IP and a port, or a host port on 127.0.0.1.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `connect` destination: `sandbox` and `port`, or `host_port`"
)]
pub struct ConnectTo {
    /// Sandbox alias whose pod IP to connect to (127.0.0.1 of the node for a host-network
    /// sandbox, whose IP is the node's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<String>,
    /// Port on the sandbox's IP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// Port on 127.0.0.1 of the node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_port: Option<u16>,
}

/// Where a connection starts other than the node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a `connect` origin: `sandbox`")]
pub struct ConnectFrom {
    /// Sandbox alias whose network namespace the connection starts in.
    pub sandbox: String,
}

/// What `connect` checks.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `connect` expectation: `answer`, `refused`"
)]
pub struct ConnectExpect {
    /// The bytes received until the server closes (read as UTF-8, lossily).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<TextExpect>,
    /// The connection must be refused (nothing listens, or nothing publishes the port).
    #[serde(default, skip_serializing_if = "is_default")]
    pub refused: bool,
}

/// What one try observed.
#[derive(Debug)]
enum Try {
    /// Connected; what the server sent.
    Answered(String),
    /// The connection was refused.
    Refused,
    /// Any other failure: unreachable, no handshake in time, reset while reading.
    Failed(io::Error),
}

impl Try {
    fn describe(&self) -> String {
        match self {
            Try::Answered(text) => format!("an answer {text:?}"),
            Try::Refused => "refused".to_owned(),
            Try::Failed(err) if err.kind() == io::ErrorKind::NetworkUnreachable => {
                format!("no connection ({err}: no route from there to the address)")
            }
            Try::Failed(err) => format!("no connection ({err})"),
        }
    }
}

impl Connect {
    /// The destination as the messages name it.
    fn target(&self) -> String {
        match (&self.to.sandbox, self.to.port, self.to.host_port) {
            (Some(sandbox), Some(port), _) => format!("{sandbox}:{port}"),
            (_, _, Some(port)) => format!("host port {port}"),
            _ => "nowhere".to_owned(),
        }
    }

    /// Whether one try's outcome is the expected one.
    fn holds(&self, outcome: &Try) -> Result<bool, StepError> {
        Ok(match outcome {
            Try::Refused => self.expect.refused,
            Try::Failed(_) => false,
            Try::Answered(text) => {
                if self.expect.refused {
                    false
                } else if let Some(answer) = &self.expect.answer {
                    match answer.check("answer", text) {
                        Ok(()) => true,
                        Err(StepError::Mismatch { .. }) => false,
                        Err(other) => return Err(other),
                    }
                } else {
                    true
                }
            }
        })
    }

    /// What the case expects, in words.
    fn wanted(&self) -> String {
        if self.expect.refused {
            "the connection refused".to_owned()
        } else {
            match &self.expect.answer {
                Some(answer) => format!("an answer {answer}"),
                None => "an accepted connection".to_owned(),
            }
        }
    }
}

/// The address a destination names.
async fn address(world: &World, to: &ConnectTo) -> Result<SocketAddr, StepError> {
    if let Some(port) = to.host_port {
        return Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port));
    }
    let (Some(alias), Some(port)) = (&to.sandbox, to.port) else {
        return Err(StepError::Unsupported(
            "connect: `to` needs `sandbox` and `port`, or `host_port`".to_owned(),
        ));
    };
    let sandbox = world.aliases.sandbox(alias)?;
    if sandbox.host_network {
        return Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port));
    }
    let status = world.runtime.pod_sandbox_status(&sandbox.id).await?;
    let ip = status
        .status
        .and_then(|s| s.network)
        .map(|n| n.ip)
        .unwrap_or_default();
    let ip: IpAddr = ip.parse().map_err(|_| {
        mismatch(
            format!("connect {alias}"),
            "a sandbox with a pod IP",
            format!("ip {:?}", world.redact(&ip)),
        )
    })?;
    Ok(SocketAddr::new(ip, port))
}

/// The network namespace the runtime serves from: where the node's host ports and routes are.
async fn node(world: &World) -> Result<Place, StepError> {
    let endpoint = Endpoint::parse_relative_to(world.runtime.endpoint(), None)
        .ok()
        .and_then(|e| e.unix_path().map(ToOwned::to_owned));
    match endpoint {
        Some(socket) => netns::node_of(&socket).map_err(|err| {
            StepError::Unsupported(format!("connect: {}", crate::errors::chain(&err)))
        }),
        // A runtime over TCP is on another machine or here; its namespace cannot be learnt.
        None => Ok(Place::Here),
    }
}

/// Where a connection starts.
async fn origin(world: &World, from: Option<&ConnectFrom>) -> Result<Place, StepError> {
    let Some(from) = from else {
        return node(world).await;
    };
    let sandbox = world.aliases.sandbox(&from.sandbox)?;
    if sandbox.host_network {
        return node(world).await;
    }
    let status = world
        .runtime
        .pod_sandbox_status_with(&sandbox.id, true)
        .await?;
    let path = crate::cri::sandbox_netns(&status.info)
        .and_then(|n| n.path)
        .filter(|p| !p.is_empty())
        .ok_or_else(|| {
            StepError::RuntimeLacks(format!(
                "the network namespace of sandbox {} (its verbose status names none), which `connect` enters",
                from.sandbox
            ))
        })?;
    let place = netns::place_of(std::path::Path::new(&path));
    // A harness in a pod of its own (deploy/) does not see the runtime's netns directory, but
    // with the node's PID namespace it sees the sandbox's process, whose namespace is the same.
    let place = match (place, crate::cri::process_id(&status.info)) {
        (Err(_), Some(pid)) => {
            netns::place_of(std::path::Path::new(&format!("/proc/{pid}/ns/net")))
        }
        (place, _) => place,
    };
    place.map_err(|err| {
        StepError::Unsupported(format!(
            "connect from {}: {}",
            from.sandbox,
            crate::errors::chain(&err)
        ))
    })
}

/// One connection: connect, send, read until the server closes or `budget` is spent.
async fn try_once(
    place: &Place,
    addr: SocketAddr,
    send: Option<&str>,
    budget: Duration,
) -> Result<Try, StepError> {
    let handshake = budget.min(HANDSHAKE);
    let connected = netns::connect(place, addr, handshake)
        .await
        .map_err(|err| {
            StepError::Unsupported(format!("connect: {}", crate::errors::chain(&err)))
        })?;
    let mut stream = match connected {
        Ok(stream) => stream,
        Err(err) if err.kind() == io::ErrorKind::ConnectionRefused => return Ok(Try::Refused),
        Err(err) => return Ok(Try::Failed(err)),
    };
    let exchange = async {
        if let Some(bytes) = send {
            stream.write_all(bytes.as_bytes()).await?;
        }
        let mut answer = Vec::new();
        let mut buffer = [0_u8; 4096];
        while answer.len() < MAX_ANSWER {
            let read = stream.read(&mut buffer).await?;
            if read == 0 {
                break;
            }
            answer.extend_from_slice(&buffer[..read]);
        }
        Ok::<_, io::Error>(answer)
    };
    Ok(
        match tokio::time::timeout(budget.max(RETRY), exchange).await {
            Ok(Ok(answer)) => Try::Answered(String::from_utf8_lossy(&answer).into_owned()),
            Ok(Err(err)) => Try::Failed(err),
            Err(_) => Try::Failed(io::Error::new(
                io::ErrorKind::TimedOut,
                "the server did not close the connection in time",
            )),
        },
    )
}

impl StepDef for Connect {
    const NAME: &'static str = "connect";
    const KIND: Kind = Kind::Check;
    const ABOUT: &'static str =
        "Connects over TCP to a pod's IP or a host port (from the node, or from another pod), sends bytes and checks the answer, or that the connection is refused.";

    fn expect_fields() -> &'static [&'static str] {
        super::fields_of::<ConnectExpect>()
    }

    fn check(&self, scope: &mut Scope) -> Result<(), CheckError> {
        match (&self.to.sandbox, self.to.port, self.to.host_port) {
            (Some(sandbox), Some(port), None) => {
                scope.sandbox(sandbox)?;
                if port == 0 {
                    return Err(CheckError::not_a_port("to.port"));
                }
            }
            (None, None, Some(0)) => {
                return Err(CheckError::not_a_port("to.host_port"))
            }
            (None, None, Some(_)) => {}
            _ => {
                return Err(CheckError::rule(
                    "",
                    "`to` takes `sandbox` and `port` (a pod's IP), or `host_port` alone (127.0.0.1 of the node)",
                ))
            }
        }
        if let Some(from) = &self.from {
            scope.sandbox(&from.sandbox)?;
        }
        if let Some(answer) = &self.expect.answer {
            if self.expect.refused {
                return Err(CheckError::conflict("expect", "answer", "refused"));
            }
            scope.text("answer", answer)?;
        }
        if self.within_ms == 0 {
            return Err(CheckError::zero("within_ms"));
        }
        Ok(())
    }

    async fn run(&self, world: &mut World) -> Result<(), StepError> {
        let addr = address(world, &self.to).await?;
        let place = origin(world, self.from.as_ref()).await?;
        let within = Duration::from_millis(self.within_ms);
        let started = Instant::now();
        let mut tries = 0_u32;
        loop {
            tries += 1;
            let budget = within.saturating_sub(started.elapsed());
            let outcome = try_once(&place, addr, self.send.as_deref(), budget).await?;
            if self.holds(&outcome)? {
                return Ok(());
            }
            // No route now means none later: routes come with the pod's network, made before.
            let hopeless = matches!(&outcome, Try::Failed(err) if err.kind() == io::ErrorKind::NetworkUnreachable);
            if hopeless || started.elapsed() + RETRY >= within {
                let from = self
                    .from
                    .as_ref()
                    .map_or_else(|| "the node".to_owned(), |f| f.sandbox.clone());
                return Err(mismatch(
                    format!("connect {} from {from}", self.target()),
                    self.wanted(),
                    world.redact(&format!(
                        "{} at {addr} ({tries} tries in {} ms)",
                        outcome.describe(),
                        started.elapsed().as_millis()
                    )),
                ));
            }
            crate::timing::pause(RETRY).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    #[rstest]
    #[case::containerd_names_the_pause_pid(r#"{"pid":4242,"runtimeSpec":{}}"#, Some(4242))]
    #[case::a_stopped_sandbox_has_pid_zero(r#"{"pid":0}"#, None)]
    #[case::no_pid(r#"{"runtimeSpec":{}}"#, None)]
    #[case::not_json("nope", None)]
    fn the_sandbox_pid_comes_from_the_verbose_info(#[case] json: &str, #[case] pid: Option<u32>) {
        let info = std::collections::BTreeMap::from([("info".to_owned(), json.to_owned())]);
        assert_eq!(crate::cri::process_id(&info), pid);
    }

    fn step(yaml: &str) -> Connect {
        serde_saphyr::from_str(yaml).unwrap()
    }

    #[rstest]
    #[case::pod_ip("to: {sandbox: sb, port: 80}", None)]
    #[case::host_port("to: {host_port: 12000}", None)]
    #[case::both("to: {sandbox: sb, port: 80, host_port: 1}", Some("`to` takes"))]
    #[case::sandbox_without_port("to: {sandbox: sb}", Some("`to` takes"))]
    #[case::port_zero("to: {sandbox: sb, port: 0}", Some("1 to 65535"))]
    #[case::host_port_zero("to: {host_port: 0}", Some("1 to 65535"))]
    #[case::unknown_sandbox(
        "to: {sandbox: other, port: 80}",
        Some("unknown sandbox alias `other`")
    )]
    #[case::unknown_origin(
        "{to: {host_port: 1}, from: {sandbox: x}}",
        Some("unknown sandbox alias `x`")
    )]
    #[case::answer_and_refused(
        "{to: {host_port: 1}, expect: {refused: true, answer: {contains: a}}}",
        Some("not both")
    )]
    #[case::bad_pattern(
        "{to: {host_port: 1}, expect: {answer: {matches: '('}}}",
        Some("answer: `matches`")
    )]
    #[case::no_time("{to: {host_port: 1}, within_ms: 0}", Some("above 0"))]
    fn the_loader_checks_where_a_connection_goes(#[case] yaml: &str, #[case] error: Option<&str>) {
        let mut scope = Scope::default();
        scope.define_sandbox("sb").unwrap();
        let result = step(yaml).check(&mut scope);
        match error {
            None => assert_eq!(result, Ok(())),
            Some(part) => {
                let message = result.unwrap_err().to_string();
                assert!(message.contains(part), "{message}");
            }
        }
    }

    fn answered(text: &str) -> Try {
        Try::Answered(text.to_owned())
    }

    #[rstest]
    #[case::any_answer_is_an_accepted_connection("to: {host_port: 1}", answered(""), true)]
    #[case::refusal_fails_an_accepted_connection("to: {host_port: 1}", Try::Refused, false)]
    #[case::answer_matches(
        "{to: {host_port: 1}, expect: {answer: {contains: ok}}}",
        answered("200 ok"),
        true
    )]
    #[case::answer_differs(
        "{to: {host_port: 1}, expect: {answer: {contains: ok}}}",
        answered("404"),
        false
    )]
    #[case::refusal_expected_and_seen(
        "{to: {host_port: 1}, expect: {refused: true}}",
        Try::Refused,
        true
    )]
    #[case::refusal_expected_but_answered(
        "{to: {host_port: 1}, expect: {refused: true}}",
        answered("hi"),
        false
    )]
    #[case::refusal_expected_but_unreachable(
        "{to: {host_port: 1}, expect: {refused: true}}",
        Try::Failed(io::Error::from(io::ErrorKind::TimedOut)),
        false
    )]
    fn a_try_holds_only_when_it_is_what_the_case_expects(
        #[case] yaml: &str,
        #[case] outcome: Try,
        #[case] holds: bool,
    ) {
        assert_eq!(step(yaml).holds(&outcome).unwrap(), holds);
    }

    #[test]
    fn the_default_time_budget_is_not_printed_back() {
        let text = serde_saphyr::to_string(&step("to: {host_port: 8}")).unwrap();
        assert!(!text.contains("within_ms"), "{text}");
        let text = serde_saphyr::to_string(&step("{to: {host_port: 8}, within_ms: 5}")).unwrap();
        assert!(text.contains("within_ms: 5"), "{text}");
    }
}
