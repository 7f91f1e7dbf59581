//! `port_forward`: the manager's `PortForward(pod, port, stream)`, recorded in the snapshot.
//! The step plays the client's side of the stream in its own task: it writes the bytes to
//! send, reads the pod's answer until it is as long as expected or the server closes, then
//! drops its end. With `connections: N` it opens N relays at once and keeps every one open
//! until all have their answer, so a runtime that serves one forward at a time fails.

use std::sync::LazyLock;
use std::time::Duration;

use regex::Regex;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _, DuplexStream};
use tokio::sync::Barrier;
use tokio::time::Instant;

use super::exec::{default_within, is_default_within};
use super::{
    check_error, is_default, is_one, one, CheckError, ErrorExpect, Kind, Scope, StepDef, TextExpect,
};
use crate::observe::{Answer, Exchange};
use crate::world::{StepError, World};

/// Room in the in-memory pipe between the step and the relay.
const PIPE: usize = 64 * 1024;
/// The most of an answer that is read.
const MAX_ANSWER: usize = 1024 * 1024;
/// How long past the relays' deadline a client waits for its relay to end.
const BACKSTOP: Duration = Duration::from_secs(1);
/// The most connections one step opens at once.
const MAX_CONNECTIONS: u32 = 16;

/// A streaming URL in an error text: its port and token change with every call.
static URL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?:https?|wss?)://[^\s\x22]+").expect("valid"));
/// A quoted network namespace path in a runtime's error text: it lies under the runtime's
/// state directory, which differs from machine to machine.
static NETNS: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\x22/[^\s\x22]*netns[^\s\x22]*\x22").expect("valid"));

/// `port_forward`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `port_forward` step: `pod`, `port`, `send`, `connections`, `within_ms`, `expect`"
)]
pub struct PortForward {
    /// Pod alias; the running pod is what `get_pods(true)` reports for it.
    pub pod: String,
    /// The pod's port (in its network namespace; the node's for a host-network pod).
    pub port: u16,
    /// Bytes to send on each connection (e.g. `"GET / HTTP/1.0\r\n\r\n"`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub send: String,
    /// How many relays to open at once (each its own PortForward call and URL).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub connections: u32,
    /// Every relay's deadline, in milliseconds.
    #[serde(default = "default_within", skip_serializing_if = "is_default_within")]
    pub within_ms: u64,
    /// Expectations (by default: every relay succeeds).
    #[serde(default, skip_serializing_if = "is_default")]
    pub expect: PortForwardExpect,
}

/// What `port_forward` checks.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `port_forward` expectation: `answer`, `error`"
)]
pub struct PortForwardExpect {
    /// What each connection received (read as UTF-8, lossily). With `equals`, reading stops
    /// once that many bytes came (an echo server never closes); otherwise at the server's
    /// close.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<TextExpect>,
    /// The manager's call fails like this (the first failing connection's error).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorExpect>,
}

/// What one connection's client side saw.
struct Seen {
    /// What the relay answered.
    relay: Result<crate::streaming::Forwarded, crate::manager::ManagerError>,
    /// The bytes written before the pipe broke (all of `send`, normally).
    sent: usize,
    /// The bytes read.
    received: Vec<u8>,
}

/// Runs `n` relays side by side in this task, each made by `forward` from its end of a pipe,
/// and plays the client on the other end: write `send`, read until `want` bytes came or the
/// relay closed, wait until every client got that far, drop the end. Each relay must honour
/// `deadline` (a failed relay drops its end, which ends its client); a client gives up a
/// little after it regardless.
async fn relay_all<F, Fut, T, E>(
    n: usize,
    send: &[u8],
    want: Option<usize>,
    deadline: Instant,
    forward: F,
) -> Vec<(Result<T, E>, usize, Vec<u8>)>
where
    F: Fn(DuplexStream) -> Fut,
    Fut: std::future::Future<Output = Result<T, E>>,
{
    let barrier = Barrier::new(n);
    let connections = (0..n).map(|_| {
        let (ours, theirs) = tokio::io::duplex(PIPE);
        let relay = forward(theirs);
        let client = play_client(ours, send, want, &barrier, deadline);
        async move {
            let (relay, (sent, received)) = tokio::join!(relay, client);
            (relay, sent, received)
        }
    });
    futures::future::join_all(connections).await
}

/// One connection's client: see [`relay_all`].
async fn play_client(
    mut ours: DuplexStream,
    send: &[u8],
    want: Option<usize>,
    barrier: &Barrier,
    deadline: Instant,
) -> (usize, Vec<u8>) {
    let mut sent = 0;
    let mut received = Vec::new();
    let talk = async {
        // A relay that failed has dropped its end: writing then fails, and reading ends.
        if ours.write_all(send).await.is_ok() {
            sent = send.len();
        }
        let mut buffer = vec![0_u8; 16 * 1024];
        while received.len() < want.unwrap_or(MAX_ANSWER).min(MAX_ANSWER) {
            match ours.read(&mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(read) => received.extend_from_slice(&buffer[..read]),
            }
        }
        // Every connection stays open until all have their answer: they overlap for sure.
        barrier.wait().await;
    };
    // The relay's own deadline ends a silent stream (and so this read, when it drops its
    // end); this later one is only a backstop, so the step reports the relay's error.
    let _ = tokio::time::timeout_at(deadline + BACKSTOP, talk).await;
    drop(ours);
    (sent, received)
}

/// The parts of an error text no other redaction knows: the streaming URL (a fresh port and
/// token on every call) as `<url>`, a network namespace path as `<netns>`.
fn redact_stream(text: &str) -> String {
    let text = URL.replace_all(text, "<url>");
    NETNS.replace_all(&text, "\"<netns>\"").into_owned()
}

impl PortForward {
    /// The bytes to read before leaving: the length of an exact answer, if one is expected.
    fn want(&self) -> Option<usize> {
        self.expect
            .answer
            .as_ref()
            .and_then(|a| a.equals.as_ref())
            .map(String::len)
    }

    /// Checks the connections' outcomes against the expectation; `redact` puts texts into
    /// suite terms.
    fn check_seen(
        &self,
        seen: Vec<Seen>,
        redact: impl Fn(&str) -> String,
    ) -> Result<(), StepError> {
        let mut answers = Vec::with_capacity(seen.len());
        let mut first_error = None;
        for one in seen {
            match one.relay {
                Ok(_) => answers.push(String::from_utf8_lossy(&one.received).into_owned()),
                Err(err) => {
                    first_error.get_or_insert(err);
                }
            }
        }
        let result = match first_error {
            Some(err) => Err(err),
            None => Ok(answers),
        };
        let Some(answers) = check_error(self.expect.error.as_ref(), result, redact)? else {
            return Ok(());
        };
        let Some(expect) = &self.expect.answer else {
            return Ok(());
        };
        let many = answers.len() > 1;
        for (i, answer) in answers.iter().enumerate() {
            let field = if many {
                format!("answer[{i}]")
            } else {
                "answer".to_owned()
            };
            expect.check(&field, answer)?;
        }
        Ok(())
    }
}

impl StepDef for PortForward {
    const NAME: &'static str = "port_forward";
    const KIND: Kind = Kind::Manager;
    const ABOUT: &'static str =
        "`PortForward(pod, port, stream)`: sends bytes to a port of the running pod through the runtime's streaming server and checks the answer (`connections: N` opens N at once).";

    fn expect_fields() -> &'static [&'static str] {
        super::fields_of::<PortForwardExpect>()
    }

    fn check(&self, scope: &mut Scope) -> Result<(), CheckError> {
        scope.pod(&self.pod)?;
        if self.pod.is_empty() {
            return Err(CheckError::empty("pod", "it must name a pod"));
        }
        if self.port == 0 {
            return Err(CheckError::not_a_port("port"));
        }
        if self.connections == 0 || self.connections > MAX_CONNECTIONS {
            return Err(CheckError::rule(
                "",
                format!("`connections` must be 1 to {MAX_CONNECTIONS}"),
            ));
        }
        if self.within_ms == 0 {
            return Err(CheckError::zero("within_ms"));
        }
        scope.error(self.expect.error.as_ref())?;
        if let Some(answer) = &self.expect.answer {
            if self.expect.error.is_some() {
                return Err(CheckError::conflict("expect", "answer", "error"));
            }
            scope.text("expect.answer", answer)?;
        }
        Ok(())
    }

    async fn run(&self, world: &mut World) -> Result<(), StepError> {
        let manager = world.ensure_manager().await?;
        let running = world.running_pod(&manager, &self.pod).await?;
        let deadline = Instant::now() + Duration::from_millis(self.within_ms);
        let n = usize::try_from(self.connections).unwrap_or(1);
        let outcomes = relay_all(n, self.send.as_bytes(), self.want(), deadline, |theirs| {
            manager.port_forward(&running, self.port, theirs, deadline)
        })
        .await;
        let seen: Vec<Seen> = outcomes
            .into_iter()
            .map(|(relay, sent, received)| Seen {
                relay,
                sent,
                received,
            })
            .collect();
        let call = if n > 1 {
            format!("port_forward {} {} x{n}", self.pod, self.port)
        } else {
            format!("port_forward {} {}", self.pod, self.port)
        };
        let outcome = match seen.iter().find_map(|s| s.relay.as_ref().err()) {
            Some(err) => Err(redact_stream(&err.to_string())),
            None => Ok(Answer::Forwarded {
                connections: seen
                    .iter()
                    .map(|s| Exchange {
                        sent: String::from_utf8_lossy(&self.send.as_bytes()[..s.sent]).into_owned(),
                        received: String::from_utf8_lossy(&s.received).into_owned(),
                    })
                    .collect(),
            }),
        };
        if n > 1 {
            world.recorder.observe_concurrent(call, outcome);
        } else {
            world.recorder.observe(call, outcome, None);
        }
        self.check_seen(seen, |t| redact_stream(&world.redact(t)))
    }
}

/// A WebSocket server on 127.0.0.1 that upgrades (choosing the client's first subprotocol)
/// and then never writes: the silent endpoint every stream's deadline must survive. Its URL
/// and the task serving it, which a test aborts.
#[cfg(test)]
// The handshake callback's error type is tungstenite's, whatever its size.
#[allow(clippy::result_large_err)]
pub(crate) async fn silent_server() -> (String, tokio::task::JoinHandle<()>) {
    use tokio_tungstenite::tungstenite::handshake::server::{Request, Response};
    use tokio_tungstenite::tungstenite::http::HeaderValue;

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/stream/silent", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((tcp, _)) = listener.accept().await {
            let choose = |request: &Request, mut response: Response| {
                let first = request
                    .headers()
                    .get("Sec-WebSocket-Protocol")
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.split(',').next())
                    .map(|p| p.trim().to_owned());
                if let Some(value) = first.and_then(|p| HeaderValue::from_str(&p).ok()) {
                    response
                        .headers_mut()
                        .insert("Sec-WebSocket-Protocol", value);
                }
                Ok(response)
            };
            if let Ok(socket) = tokio_tungstenite::accept_hdr_async(tcp, choose).await {
                // Held open, never written to.
                held.push(socket);
            }
        }
    });
    (url, task)
}

#[cfg(test)]
mod tests {
    use rstest::rstest;
    use tokio::io::AsyncWriteExt;

    use super::*;
    use crate::manager::ManagerError;
    use crate::streaming::{ClosedBy, Forwarded};

    fn step(yaml: &str) -> PortForward {
        serde_saphyr::from_str(yaml).unwrap()
    }

    #[rstest]
    #[case::plain("{pod: web, port: 80, send: hi}", None)]
    #[case::port_zero("{pod: web, port: 0}", Some("1 to 65535"))]
    #[case::no_pod("{pod: '', port: 80}", Some("must name a pod"))]
    #[case::bad_pod("{pod: 'a b', port: 80}", Some("cannot name a pod"))]
    #[case::no_connections("{pod: web, port: 80, connections: 0}", Some("1 to 16"))]
    #[case::too_many_connections("{pod: web, port: 80, connections: 17}", Some("1 to 16"))]
    #[case::no_time("{pod: web, port: 80, within_ms: 0}", Some("above 0"))]
    #[case::answer_and_error(
        "{pod: web, port: 80, expect: {answer: {equals: x}, error: {contains: y}}}",
        Some("not both")
    )]
    #[case::bad_pattern(
        "{pod: web, port: 80, expect: {answer: {matches: '('}}}",
        Some("expect.answer: `matches`")
    )]
    fn the_loader_checks_a_port_forward(#[case] yaml: &str, #[case] error: Option<&str>) {
        let result = step(yaml).check(&mut Scope::default());
        match error {
            None => assert_eq!(result, Ok(())),
            Some(part) => {
                let message = result.unwrap_err().to_string();
                assert!(message.contains(part), "{message}");
            }
        }
    }

    #[test]
    fn a_streaming_url_and_a_netns_path_in_an_error_are_tokens() {
        assert_eq!(
            redact_stream("port-forward of port 80 through \"http://127.0.0.1:4321/portforward/Ab-c\" failed: refused"),
            "port-forward of port 80 through \"<url>\" failed: refused"
        );
        assert_eq!(
            redact_stream("in network namespace \"/run/x/netns/cni-1\": failed"),
            "in network namespace \"<netns>\": failed"
        );
    }

    fn forwarded() -> Result<Forwarded, ManagerError> {
        Ok(Forwarded {
            sent: 2,
            received: 2,
            closed_by: ClosedBy::Local,
        })
    }

    fn seen(relay: Result<Forwarded, ManagerError>, received: &str) -> Seen {
        Seen {
            relay,
            sent: 2,
            received: received.as_bytes().to_vec(),
        }
    }

    fn not_found() -> Result<Forwarded, ManagerError> {
        Err(ManagerError::PodSandboxesNotFound {
            pod: "web_ns".to_owned(),
        })
    }

    #[rstest]
    #[case::answer_holds("{expect: {answer: {equals: hi}}}", vec![seen(forwarded(), "hi")], None)]
    #[case::answer_differs(
        "{expect: {answer: {equals: hi}}}",
        vec![seen(forwarded(), "ho")],
        Some("answer: expected \"hi\", got \"ho\"")
    )]
    #[case::second_connection_differs(
        "{connections: 2, expect: {answer: {equals: hi}}}",
        vec![seen(forwarded(), "hi"), seen(forwarded(), "h")],
        Some("answer[1]: expected")
    )]
    #[case::a_failed_connection_fails_the_step(
        "{connections: 2}",
        vec![seen(forwarded(), "hi"), seen(not_found(), "")],
        Some("error: expected success, got sandboxes for pod \"web_ns\" not found")
    )]
    #[case::error_expected(
        "{expect: {error: {contains: 'not found'}}}",
        vec![seen(not_found(), "")],
        None
    )]
    #[case::error_expected_but_answered(
        "{expect: {error: {contains: 'not found'}}}",
        vec![seen(forwarded(), "hi")],
        Some("error: expected an error")
    )]
    fn connections_are_checked_against_the_expectation(
        #[case] extra: &str,
        #[case] seen: Vec<Seen>,
        #[case] error: Option<&str>,
    ) {
        let yaml = format!("{{pod: web, port: 80, {}", &extra[1..]);
        let checked = step(&yaml).check_seen(seen, str::to_owned);
        match error {
            None => assert!(checked.is_ok(), "{checked:?}"),
            Some(part) => {
                let message = checked.unwrap_err().to_string();
                assert!(message.contains(part), "{message}");
            }
        }
    }

    /// A relay that echoes what it reads until its peer goes, noting how many relays were
    /// open at once.
    async fn echo(
        theirs: DuplexStream,
        open: &std::sync::atomic::AtomicUsize,
        most: &std::sync::atomic::AtomicUsize,
    ) -> Result<(), std::io::Error> {
        use std::sync::atomic::Ordering;
        let now = open.fetch_add(1, Ordering::SeqCst) + 1;
        most.fetch_max(now, Ordering::SeqCst);
        let (mut read, mut write) = tokio::io::split(theirs);
        let copied = tokio::io::copy(&mut read, &mut write).await;
        let _ = write.shutdown().await;
        open.fetch_sub(1, Ordering::SeqCst);
        copied.map(|_| ())
    }

    #[tokio::test]
    async fn connections_overlap_and_each_reads_its_whole_echo() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let (open, most) = (AtomicUsize::new(0), AtomicUsize::new(0));
        let deadline = Instant::now() + Duration::from_secs(10);
        let outcomes = relay_all(3, b"ping", Some(4), deadline, |theirs| {
            echo(theirs, &open, &most)
        })
        .await;
        assert_eq!(outcomes.len(), 3);
        for (relay, sent, received) in outcomes {
            assert!(relay.is_ok(), "{relay:?}");
            assert_eq!(sent, 4);
            assert_eq!(received, b"ping");
        }
        assert_eq!(most.load(Ordering::SeqCst), 3);
        assert_eq!(open.load(Ordering::SeqCst), 0);
    }

    #[tokio::test]
    async fn a_silent_streaming_server_fails_the_relay_at_its_deadline() {
        let (url, server) = silent_server().await;
        let deadline = Instant::now() + Duration::from_millis(300);
        let outcomes = relay_all(2, b"ping", Some(4), deadline, |theirs| {
            crate::streaming::forward(&url, 80, theirs, deadline)
        })
        .await;
        server.abort();
        for (relay, _, received) in outcomes {
            let err = relay.expect_err("a silent server cannot answer");
            assert!(err.is_deadline(), "{err:?}");
            assert!(received.is_empty());
        }
    }
}
