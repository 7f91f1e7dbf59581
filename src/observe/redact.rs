//! Redaction: everything that differs from run to run or runtime to runtime (ids, UIDs, the
//! namespace, IPs, timestamps, the run id) becomes a stable token named after the suite's
//! aliases, so a snapshot is byte-stable and the mock's and a real runtime's read alike.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use super::tree::Node;
use regex::Regex;

use crate::cri::labels;

/// 64 hexadecimal characters: what containerd and the mock use for ids; with the `sha256:` an
/// image id or digest may carry, which a runtime is free to leave off (the image-id-bare-hex
/// freedom), so a reference reads the same either way.
static ID: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\b(?:sha256:)?[0-9a-f]{64}\b").expect("valid"));
/// Dotted-quad IPv4 addresses.
static IPV4: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b(?:25[0-5]|2[0-4]\d|1?\d?\d)(?:\.(?:25[0-5]|2[0-4]\d|1?\d?\d)){3}\b")
        .expect("valid")
});
/// UUIDs, as in the network namespace paths CNI runtimes create.
static UUID: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b").expect("valid")
});

/// gRPC status codes as tonic's `Debug` names them, which is how CRI call errors are written.
const CODES: &str = "Ok|Cancelled|Unknown|InvalidArgument|DeadlineExceeded|NotFound|AlreadyExists|\
PermissionDenied|ResourceExhausted|FailedPrecondition|Aborted|OutOfRange|Unimplemented|Internal|\
Unavailable|DataLoss|Unauthenticated";
/// The runtime's text after a CRI call error's code, as `CallError` writes it (`CRI Method on
/// ENDPOINT: Code: text`) and as the call log does (`... -> Code: text`). An error's sources
/// come last in its message, so the text runs to the end.
static CALL_ERROR: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r"(?s)(\bCRI [A-Za-z]+ on \S+?: (?:{CODES})|-> (?:{CODES})): (.+)$"
    ))
    .expect("valid")
});
/// The runtime's text of a port-forward its streaming server refused, after the relay's own
/// words (`StreamError::PortForward`).
static PORT_FORWARD_ERROR: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?s)(\bport-forward of port \d+ through "(?:[^"\\]|\\.)*" failed): (.+)$"#)
        .expect("valid")
});
/// What a runtime's own words become in a snapshot.
pub const RUNTIME_TEXT: &str = "<runtime text>";

/// Maps a case's volatile values to stable tokens. Fed as the case creates objects.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    /// Literal replacements; applied longest first so a UID is not cut by a shorter one.
    literals: BTreeMap<String, String>,
    /// IP -> sandbox alias.
    ips: BTreeMap<String, String>,
    /// Values that are replaced only when a whole string equals them (a short run id could
    /// otherwise hit unrelated text).
    whole: BTreeMap<String, String>,
}

impl Redactor {
    /// A redactor for one case of run `run_id` in `namespace`, case number `case_no`.
    pub fn new(run_id: &str, namespace: &str, case_no: usize) -> Self {
        let mut redactor = Self::default();
        redactor.literal(namespace, "<namespace>");
        redactor.literal(
            &format!("{}={run_id}", labels::RUN_ID),
            &format!("{}=<run>", labels::RUN_ID),
        );
        redactor.literal(
            &format!("{}={case_no}", labels::CASE),
            &format!("{}=<case>", labels::CASE),
        );
        redactor.whole.insert(run_id.to_owned(), "<run>".to_owned());
        redactor
    }

    fn literal(&mut self, from: &str, to: &str) {
        if !from.is_empty() {
            self.literals.insert(from.to_owned(), to.to_owned());
        }
    }

    /// The endpoint the case talks to (a temporary socket on the mock), as `<endpoint>`.
    pub fn endpoint(&mut self, endpoint: &str) {
        self.literal(endpoint, "<endpoint>");
        if let Some(path) = endpoint.strip_prefix("unix://") {
            self.literal(path, "<endpoint>");
        }
    }

    /// The runtime's name (the manager's runtime type, in every container id), as `<runtime>`
    /// wherever a whole value equals it, so one case's snapshots on different runtimes differ
    /// only where the runtimes behave differently.
    pub fn runtime(&mut self, name: &str) {
        if !name.is_empty() {
            self.whole.insert(name.to_owned(), "<runtime>".to_owned());
            // The kubelet's form of a container id inside a message: `containerd://ID`.
            self.literal(&format!("{name}://"), "<runtime>://");
        }
    }

    /// Any value shown as the given text (e.g. a fixed pod UID with the run's suffix).
    pub fn literal_as(&mut self, value: &str, shown: &str) {
        self.literal(value, shown);
    }

    /// A sandbox id known by its alias.
    pub fn sandbox(&mut self, id: &str, alias: &str) {
        self.literal(id, &format!("<sandbox:{alias}>"));
    }

    /// A container id known by its alias.
    pub fn container(&mut self, id: &str, alias: &str) {
        self.literal(id, &format!("<container:{alias}>"));
    }

    /// A pod UID known by its pod alias.
    pub fn pod(&mut self, uid: &str, alias: &str) {
        self.literal(uid, &format!("<uid:{alias}>"));
    }

    /// An IP a sandbox reported.
    pub fn ip(&mut self, ip: &str, sandbox_alias: &str) {
        if !ip.is_empty() {
            self.ips.insert(ip.to_owned(), sandbox_alias.to_owned());
        }
    }

    /// The token for an IP: `<ip:ALIAS>` for a sandbox's, else `<ip>`.
    pub fn ip_token(&self, ip: &str) -> String {
        match self.ips.get(ip) {
            Some(alias) => format!("<ip:{alias}>"),
            None => "<ip>".to_owned(),
        }
    }

    /// Redacts one string.
    pub fn text(&self, text: &str) -> String {
        if let Some(token) = self.whole.get(text) {
            return token.clone();
        }
        let mut out = text.to_owned();
        let mut literals: Vec<(&String, &String)> = self.literals.iter().collect();
        literals.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.0.cmp(b.0)));
        for (from, to) in literals {
            if out.contains(from.as_str()) {
                out = out.replace(from.as_str(), to);
            }
        }
        let out = ID.replace_all(&out, "<id>");
        let out = IPV4.replace_all(&out, |caps: &regex::Captures<'_>| self.ip_token(&caps[0]));
        UUID.replace_all(&out, "<uuid>").into_owned()
    }

    /// Redacts an observation tree: every string, every key, and by key name every timestamp
    /// (`*_at`, `timestamp`) and the case label's value; and, unlike [`Redactor::text`] (which
    /// makes failure messages, where the runtime's words help), the runtime's own text of a
    /// refused CRI call or port-forward, so a reference holds the code and our words only.
    pub fn node(&self, node: Node) -> Node {
        match node {
            Node::Str(text) => Node::Str(runtime_text(&self.text(&text))),
            Node::Seq(items) => Node::Seq(items.into_iter().map(|n| self.node(n)).collect()),
            Node::Map(entries) => Node::Map(
                entries
                    .into_iter()
                    .map(|(key, value)| {
                        let name = key.as_str().unwrap_or_default();
                        let value = if is_timestamp_key(name) && is_nonzero_number(&value) {
                            Node::Str("<timestamp>".to_owned())
                        } else if name == labels::CASE {
                            Node::Str("<case>".to_owned())
                        } else {
                            self.node(value)
                        };
                        (self.node(key), value)
                    })
                    .collect(),
            ),
            other => other,
        }
    }
}

/// `text` with the runtime's words of a CRI call error or a port-forward failure replaced by
/// [`RUNTIME_TEXT`]: runtimes word the same refusal differently (containerd's `an error occurred
/// when try to find container`), and a reference must hold for every runtime. The code and the
/// manager's and harness's own words stay, and so does the harness's own deadline message.
pub fn runtime_text(text: &str) -> String {
    let text = CALL_ERROR.replace(text, |caps: &regex::Captures<'_>| {
        if caps[2].starts_with("no answer within ") {
            caps[0].to_owned()
        } else {
            format!("{}: {RUNTIME_TEXT}", &caps[1])
        }
    });
    PORT_FORWARD_ERROR
        .replace(&text, format!("${{1}}: {RUNTIME_TEXT}"))
        .into_owned()
}

fn is_timestamp_key(key: &str) -> bool {
    key.ends_with("_at") || key == "timestamp"
}

fn is_nonzero_number(node: &Node) -> bool {
    match node {
        Node::Int(n) => *n != 0,
        Node::Uint(n) => *n != 0,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    const SANDBOX: &str = "5d41402abc4b2a76b9719d911017c592aaaabbbbccccddddeeeeffff00001111";
    const CONTAINER: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    const STRANGER: &str = "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff";

    fn redactor() -> Redactor {
        let mut r = Redactor::new("r1x", "crih-r1x-3", 3);
        r.sandbox(SANDBOX, "old");
        r.container(CONTAINER, "app");
        r.pod("r1x-3-web", "web");
        r.pod("r1x-3-web-2", "web-2");
        r.ip("10.88.0.2", "old");
        r.runtime("containerd");
        r
    }

    #[rstest]
    #[case::sandbox_id(SANDBOX, "<sandbox:old>")]
    #[case::container_id_inside_a_message(
        &format!("cannot stop container {CONTAINER}: gone"),
        "cannot stop container <container:app>: gone"
    )]
    #[case::unknown_id(STRANGER, "<id>")]
    #[case::image_id_with_its_algorithm(&format!("sha256:{STRANGER}"), "<id>")]
    #[case::digest_in_a_reference(&format!("busybox@sha256:{STRANGER}"), "busybox@<id>")]
    #[case::longer_uid_wins("r1x-3-web-2 and r1x-3-web", "<uid:web-2> and <uid:web>")]
    #[case::namespace("crih-r1x-3/web", "<namespace>/web")]
    #[case::known_ip("10.88.0.2", "<ip:old>")]
    #[case::unknown_ip("ip 10.88.0.9 here", "ip <ip> here")]
    #[case::not_an_ip("version 0.1.0", "version 0.1.0")]
    #[case::run_id_whole("r1x", "<run>")]
    #[case::runtime_name_whole("containerd", "<runtime>")]
    #[case::runtime_name_inside_text_is_left("containerd 1.6", "containerd 1.6")]
    #[case::a_kubelet_container_id_in_a_message(
        &format!("failed to get containerSpec (id=\"containerd://{CONTAINER}\")"),
        "failed to get containerSpec (id=\"<runtime>://<container:app>\")"
    )]
    #[case::run_id_inside_other_text_is_left("r1xyz", "r1xyz")]
    #[case::run_label_in_a_summary(
        "label_selector={cri-harness.io/run-id=r1x}",
        "label_selector={cri-harness.io/run-id=<run>}"
    )]
    #[case::netns_uuid(
        "/var/run/netns/cni-1b2c3d4e-aaaa-bbbb-cccc-0123456789ab",
        "/var/run/netns/cni-<uuid>"
    )]
    fn strings_are_redacted(#[case] input: &str, #[case] expected: &str) {
        assert_eq!(redactor().text(input), expected);
    }

    #[rstest]
    #[case::call_error(
        "CRI StopContainer on <endpoint>: NotFound: an error occurred when try to find container \"x\": not found",
        "CRI StopContainer on <endpoint>: NotFound: <runtime text>"
    )]
    #[case::wrapped_call_error(
        "kill_container app: KillContainerError: CRI StopContainer on unix:///run/c.sock: Internal: shim\nis stuck",
        "kill_container app: KillContainerError: CRI StopContainer on unix:///run/c.sock: Internal: <runtime text>"
    )]
    #[case::call_log_outcome(
        "StopPodSandbox id=<sandbox:sb> -> Unknown: netns busy",
        "StopPodSandbox id=<sandbox:sb> -> Unknown: <runtime text>"
    )]
    #[case::code_without_text_is_left(
        "CRI Version on <endpoint>: Unimplemented",
        "CRI Version on <endpoint>: Unimplemented"
    )]
    #[case::ok_is_left("Version version=\"0.1.0\" -> OK", "Version version=\"0.1.0\" -> OK")]
    #[case::our_deadline_is_left(
        "CRI Status on <endpoint>: DeadlineExceeded: no answer within 10s",
        "CRI Status on <endpoint>: DeadlineExceeded: no answer within 10s"
    )]
    #[case::port_forward_relay(
        "port forward to port 80 of pod \"web_<namespace>\" failed: port-forward of port 80 through \"<url>\" failed: error forwarding port 80: dial tcp4 <ip>:80: connect: connection refused ",
        "port forward to port 80 of pod \"web_<namespace>\" failed: port-forward of port 80 through \"<url>\" failed: <runtime text>"
    )]
    #[case::manager_words_are_left(
        "sandboxes for pod \"nobody_<namespace>\" not found",
        "sandboxes for pod \"nobody_<namespace>\" not found"
    )]
    fn a_runtimes_own_text_is_redacted_in_snapshots_only(
        #[case] input: &str,
        #[case] expected: &str,
    ) {
        let r = redactor();
        assert_eq!(
            r.node(Node::Str(input.to_owned())),
            Node::Str(expected.to_owned())
        );
        // Failure messages keep the runtime's words.
        assert_eq!(r.text(input), input);
    }

    #[test]
    fn timestamps_and_the_case_label_are_redacted_by_key_and_zero_stays_visible() {
        let tree = Node::Map(vec![
            (
                Node::Str("created_at".into()),
                Node::Int(1_700_000_000_000_000_000),
            ),
            (Node::Str("finished_at".into()), Node::Int(0)),
            (
                Node::Str("labels".into()),
                Node::Map(vec![
                    (
                        Node::Str("cri-harness.io/case".into()),
                        Node::Str("3".into()),
                    ),
                    (
                        Node::Str("cri-harness.io/run-id".into()),
                        Node::Str("r1x".into()),
                    ),
                ]),
            ),
            (Node::Str("id".into()), Node::Str(SANDBOX.into())),
        ]);
        let out = redactor().node(tree);
        let expected = Node::Map(vec![
            (
                Node::Str("created_at".into()),
                Node::Str("<timestamp>".into()),
            ),
            (Node::Str("finished_at".into()), Node::Int(0)),
            (
                Node::Str("labels".into()),
                Node::Map(vec![
                    (
                        Node::Str("cri-harness.io/case".into()),
                        Node::Str("<case>".into()),
                    ),
                    (
                        Node::Str("cri-harness.io/run-id".into()),
                        Node::Str("<run>".into()),
                    ),
                ]),
            ),
            (Node::Str("id".into()), Node::Str("<sandbox:old>".into())),
        ]);
        assert_eq!(out, expected);
    }
}
