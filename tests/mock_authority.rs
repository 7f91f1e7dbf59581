//! The mock's socket at the HTTP/2 frame level: a hand-written client sends real gRPC Version
//! calls with every `:authority` a unix-socket client may send (the socket path, its
//! percent-encoding, empty, none, `localhost`), through HPACK's dynamic table, table size
//! updates, CONTINUATION frames, padding and priority, many streams on one connection, and
//! checks each answer down to the decoded VersionResponse.

use std::collections::{BTreeMap, VecDeque};
use std::path::Path;
use std::time::Duration;

use cri_harness::cri::v1;
use cri_harness::mock::{MockRuntime, MockServer};
use loona_hpack::encoder::encode_integer_into;
use loona_hpack::Decoder;
use prost::Message;
use rstest::rstest;
use tempfile::TempDir;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;

const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
const DATA: u8 = 0x0;
const HEADERS: u8 = 0x1;
const RST_STREAM: u8 = 0x3;
const SETTINGS: u8 = 0x4;
const PING: u8 = 0x6;
const GOAWAY: u8 = 0x7;
const CONTINUATION: u8 = 0x9;
const END_STREAM: u8 = 0x1;
const ACK: u8 = 0x1;
const END_HEADERS: u8 = 0x4;
const PADDED: u8 = 0x8;
const PRIORITY: u8 = 0x20;
const SETTINGS_MAX_CONCURRENT_STREAMS: u16 = 0x3;
/// HPACK's default dynamic table size, which the mock's h2 advertises.
const TABLE_SIZE: usize = 4096;
/// Requests in flight at once, unless the server allows fewer.
const BATCH: usize = 50;
/// A guard against a server that never answers: the test fails instead of hanging.
const READ_GUARD: Duration = Duration::from_secs(30);
const VERSION_PATH: &str = "/runtime.v1.RuntimeService/Version";

/// How the client lays out one request's header block in frames.
#[derive(Debug, Clone, Copy, Default)]
struct Shape {
    /// Fragments of the block: 1 is a lone HEADERS frame, more add CONTINUATION frames.
    pieces: usize,
    /// Pad length of a PADDED HEADERS frame.
    padding: Option<u8>,
    /// Whether the HEADERS frame carries PRIORITY fields.
    priority: bool,
}

impl Shape {
    fn plain() -> Self {
        Self {
            pieces: 1,
            ..Self::default()
        }
    }
}

/// The client's HPACK dynamic table, kept as its encoder must (RFC 7541 §4).
#[derive(Debug)]
struct Table {
    /// Newest first, as HPACK indexes them (62 is the newest).
    entries: VecDeque<(Vec<u8>, Vec<u8>)>,
    size: usize,
    max: usize,
}

impl Table {
    fn new() -> Self {
        Self {
            entries: VecDeque::new(),
            size: 0,
            max: TABLE_SIZE,
        }
    }

    fn entry_size(name: &[u8], value: &[u8]) -> usize {
        name.len() + value.len() + 32
    }

    fn evict(&mut self) {
        while self.size > self.max {
            if let Some((name, value)) = self.entries.pop_back() {
                self.size -= Self::entry_size(&name, &value);
            }
        }
    }

    fn set_max(&mut self, max: usize) {
        self.max = max;
        self.evict();
    }

    fn insert(&mut self, name: &[u8], value: &[u8]) {
        self.size += Self::entry_size(name, value);
        self.entries.push_front((name.to_vec(), value.to_vec()));
        self.evict();
    }

    fn index_of(&self, name: &[u8], value: &[u8]) -> Option<usize> {
        self.entries
            .iter()
            .position(|(n, v)| n == name && v == value)
            .map(|at| 62 + at)
    }

    /// The size of the `n` newest entries.
    fn newest_size(&self, n: usize) -> usize {
        self.entries
            .iter()
            .take(n)
            .map(|(name, value)| Self::entry_size(name, value))
            .sum()
    }
}

/// What came back on one stream.
#[derive(Debug, Default)]
struct Answer {
    headers: BTreeMap<String, String>,
    body: Vec<u8>,
    reset: Option<u32>,
    done: bool,
}

impl Answer {
    /// Checks the answer is a Version response in the mock's words.
    fn assert_version(&self, stream: u32) {
        assert_eq!(self.reset, None, "stream {stream} was reset");
        assert_eq!(self.headers.get(":status").map(String::as_str), Some("200"));
        assert_eq!(
            self.headers.get("grpc-status").map(String::as_str),
            Some("0"),
            "stream {stream}: {:?}",
            self.headers
        );
        assert!(self.body.len() >= 5, "stream {stream}: no gRPC message");
        assert_eq!(self.body[0], 0, "stream {stream}: compressed message");
        let len = u32::from_be_bytes([self.body[1], self.body[2], self.body[3], self.body[4]]);
        assert_eq!(self.body.len(), 5 + len as usize, "stream {stream}");
        let version = v1::VersionResponse::decode(&self.body[5..]).unwrap();
        assert_eq!(version.version, "0.1.0");
        assert_eq!(version.runtime_name, "cri-harness-mock");
        assert_eq!(version.runtime_version, env!("CARGO_PKG_VERSION"));
        assert_eq!(version.runtime_api_version, "v1");
    }
}

/// A bare HTTP/2 client on one connection, speaking gRPC by hand.
struct RawClient {
    socket: UnixStream,
    table: Table,
    decoder: Decoder<'static>,
    next_stream: u32,
    max_concurrent: usize,
    /// A server header block still waiting for its CONTINUATION.
    partial: Option<(u32, u8, Vec<u8>)>,
}

impl RawClient {
    async fn connect(path: &Path) -> Self {
        let mut socket = UnixStream::connect(path).await.unwrap();
        let mut hello = PREFACE.to_vec();
        frame(&mut hello, SETTINGS, 0, 0, &[]);
        // Open the connection window wide so 1,000 answers need no WINDOW_UPDATE from us.
        let grow: u32 = 0x7fff_ffff - 65_535;
        frame(&mut hello, 0x8, 0, 0, &grow.to_be_bytes());
        socket.write_all(&hello).await.unwrap();
        Self {
            socket,
            table: Table::new(),
            decoder: Decoder::new(),
            next_stream: 1,
            max_concurrent: BATCH,
            partial: None,
        }
    }

    /// A Version request's header block; `authority: None` leaves the field out. Fields a
    /// gRPC client repeats go through the dynamic table: inserted once, then indexed.
    fn header_block(&mut self, authority: Option<&str>, size_updates: &[usize]) -> Vec<u8> {
        let mut block = Vec::new();
        for &size in size_updates {
            integer(&mut block, size, 5, 0x20);
            self.table.set_max(size);
        }
        block.push(0x80 | 3); // :method POST
        block.push(0x80 | 6); // :scheme http
        self.indexed_field(&mut block, Some(4), ":path", VERSION_PATH.as_bytes());
        if let Some(authority) = authority {
            self.indexed_field(&mut block, Some(1), ":authority", authority.as_bytes());
        }
        self.indexed_field(&mut block, Some(31), "content-type", b"application/grpc");
        self.indexed_field(&mut block, None, "te", b"trailers");
        // Literal without indexing, new name: never enters the table.
        block.push(0);
        string(&mut block, b"user-agent");
        string(&mut block, b"cri-harness-raw-h2-test");
        block
    }

    /// Refers to the field in the dynamic table, or inserts it (RFC 7541 §6.2.1).
    fn indexed_field(
        &mut self,
        block: &mut Vec<u8>,
        name_index: Option<usize>,
        name: &str,
        value: &[u8],
    ) {
        if let Some(index) = self.table.index_of(name.as_bytes(), value) {
            integer(block, index, 7, 0x80);
            return;
        }
        match name_index {
            Some(index) => integer(block, index, 6, 0x40),
            None => {
                block.push(0x40);
                string(block, name.as_bytes());
            }
        }
        string(block, value);
        self.table.insert(name.as_bytes(), value);
    }

    /// Frames one Version call on a new stream; answers the stream id.
    fn request(&mut self, out: &mut Vec<u8>, block: &[u8], shape: Shape) -> u32 {
        let stream = self.next_stream;
        self.next_stream += 2;
        let pieces = shape.pieces.max(1);
        let cut = block.len().div_ceil(pieces).max(1);
        let mut fragments: Vec<&[u8]> = block.chunks(cut).collect();
        fragments.resize(pieces, &[]);
        let mut flags = 0;
        let mut payload = Vec::new();
        if let Some(padding) = shape.padding {
            flags |= PADDED;
            payload.push(padding);
        }
        if shape.priority {
            flags |= PRIORITY;
            // Depends on no stream, weight 16 (the field holds weight - 1).
            payload.extend_from_slice(&[0, 0, 0, 0, 15]);
        }
        payload.extend_from_slice(fragments[0]);
        payload.extend(std::iter::repeat_n(
            0,
            usize::from(shape.padding.unwrap_or(0)),
        ));
        if pieces == 1 {
            flags |= END_HEADERS;
        }
        frame(out, HEADERS, flags, stream, &payload);
        for (at, fragment) in fragments.iter().enumerate().skip(1) {
            let flags = if at + 1 == pieces { END_HEADERS } else { 0 };
            frame(out, CONTINUATION, flags, stream, fragment);
        }
        let message = v1::VersionRequest {
            version: "0.1.0".to_owned(),
        }
        .encode_to_vec();
        let mut body = vec![0];
        body.extend_from_slice(&(message.len() as u32).to_be_bytes());
        body.extend_from_slice(&message);
        frame(out, DATA, END_STREAM, stream, &body);
        stream
    }

    /// Sends `requests` (already framed, on `streams`) and reads until each stream has ended.
    async fn exchange(&mut self, requests: &[u8], streams: &[u32]) -> BTreeMap<u32, Answer> {
        self.socket.write_all(requests).await.unwrap();
        let mut answers: BTreeMap<u32, Answer> =
            streams.iter().map(|&s| (s, Answer::default())).collect();
        while answers.values().any(|a| !a.done) {
            let (kind, flags, stream, payload) =
                tokio::time::timeout(READ_GUARD, read_frame(&mut self.socket))
                    .await
                    .expect("the mock stopped answering");
            self.handle(kind, flags, stream, payload, &mut answers)
                .await;
        }
        answers
    }

    async fn handle(
        &mut self,
        kind: u8,
        flags: u8,
        stream: u32,
        payload: Vec<u8>,
        answers: &mut BTreeMap<u32, Answer>,
    ) {
        match kind {
            SETTINGS if flags & ACK == 0 => {
                for setting in payload.chunks_exact(6) {
                    let id = u16::from_be_bytes([setting[0], setting[1]]);
                    let value =
                        u32::from_be_bytes([setting[2], setting[3], setting[4], setting[5]]);
                    if id == SETTINGS_MAX_CONCURRENT_STREAMS {
                        self.max_concurrent = self.max_concurrent.min(value as usize);
                    }
                }
                let mut ack = Vec::new();
                frame(&mut ack, SETTINGS, ACK, 0, &[]);
                self.socket.write_all(&ack).await.unwrap();
            }
            PING if flags & ACK == 0 => {
                let mut pong = Vec::new();
                frame(&mut pong, PING, ACK, 0, &payload);
                self.socket.write_all(&pong).await.unwrap();
            }
            GOAWAY => panic!("the mock closed the connection: GOAWAY {payload:?}"),
            DATA => {
                let body = unpad(flags, &payload);
                let answer = answers.get_mut(&stream).expect("DATA on an unknown stream");
                answer.body.extend_from_slice(body);
                answer.done |= flags & END_STREAM != 0;
            }
            HEADERS => {
                let mut fragment = unpad(flags, &payload);
                if flags & PRIORITY != 0 {
                    fragment = &fragment[5..];
                }
                self.partial = Some((stream, flags, fragment.to_vec()));
                if flags & END_HEADERS != 0 {
                    self.finish_headers(answers);
                }
            }
            CONTINUATION => {
                let partial = self.partial.as_mut().expect("CONTINUATION out of a block");
                partial.2.extend_from_slice(&payload);
                if flags & END_HEADERS != 0 {
                    self.finish_headers(answers);
                }
            }
            RST_STREAM => {
                let answer = answers
                    .get_mut(&stream)
                    .expect("RST_STREAM on an unknown stream");
                answer.reset = Some(u32::from_be_bytes([
                    payload[0], payload[1], payload[2], payload[3],
                ]));
                answer.done = true;
            }
            _ => {}
        }
    }

    fn finish_headers(&mut self, answers: &mut BTreeMap<u32, Answer>) {
        let (stream, flags, block) = self.partial.take().expect("a header block");
        let fields = self
            .decoder
            .decode(&block)
            .expect("the mock's HPACK decodes");
        let answer = answers
            .get_mut(&stream)
            .expect("HEADERS on an unknown stream");
        for (name, value) in fields {
            answer.headers.insert(
                String::from_utf8(name).unwrap(),
                String::from_utf8(value).unwrap(),
            );
        }
        answer.done |= flags & END_STREAM != 0;
    }

    /// Makes `calls` Version calls in batches of concurrent streams; `prepare` gives each
    /// call's authority and size updates, `shape` its framing. Checks every answer.
    async fn version_calls(
        &mut self,
        calls: usize,
        mut prepare: impl FnMut(usize, &Table) -> (Option<String>, Vec<usize>),
        shape: Shape,
    ) -> usize {
        let mut answered = 0;
        let mut call = 0;
        while call < calls {
            let batch = self.max_concurrent.min(calls - call);
            let mut requests = Vec::new();
            let mut streams = Vec::new();
            for _ in 0..batch {
                let (authority, updates) = prepare(call, &self.table);
                let block = self.header_block(authority.as_deref(), &updates);
                streams.push(self.request(&mut requests, &block, shape));
                call += 1;
            }
            for (stream, answer) in self.exchange(&requests, &streams).await {
                answer.assert_version(stream);
                answered += 1;
            }
        }
        answered
    }
}

fn frame(out: &mut Vec<u8>, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
    let len = (payload.len() as u32).to_be_bytes();
    out.extend_from_slice(&[len[1], len[2], len[3], kind, flags]);
    out.extend_from_slice(&stream.to_be_bytes());
    out.extend_from_slice(payload);
}

fn integer(out: &mut Vec<u8>, value: usize, prefix: u8, leading: u8) {
    encode_integer_into(value, prefix, leading, out).unwrap();
}

/// A string literal without Huffman coding.
fn string(out: &mut Vec<u8>, bytes: &[u8]) {
    integer(out, bytes.len(), 7, 0);
    out.extend_from_slice(bytes);
}

fn unpad(flags: u8, payload: &[u8]) -> &[u8] {
    if flags & PADDED == 0 {
        return payload;
    }
    let padding = usize::from(payload[0]);
    &payload[1..payload.len() - padding]
}

async fn read_frame(socket: &mut UnixStream) -> (u8, u8, u32, Vec<u8>) {
    let mut head = [0; 9];
    socket.read_exact(&mut head).await.unwrap();
    let len = usize::from(head[0]) << 16 | usize::from(head[1]) << 8 | usize::from(head[2]);
    let stream = u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff;
    let mut payload = vec![0; len];
    socket.read_exact(&mut payload).await.unwrap();
    (head[3], head[4], stream, payload)
}

async fn mock_on_socket() -> (TempDir, MockServer) {
    let dir = tempfile::tempdir().unwrap();
    let server = MockRuntime::new()
        .serve_unix(&dir.path().join("mock.sock"))
        .await
        .unwrap();
    (dir, server)
}

fn socket_path(server: &MockServer) -> String {
    server.path().to_str().unwrap().to_owned()
}

/// `/` as gRPC C-core >= 1.57 writes it in a unix socket's authority.
fn percent_encoded(path: &str) -> String {
    path.replace('/', "%2F")
}

#[tokio::test]
async fn a_thousand_calls_on_one_connection_with_an_indexed_socket_path_authority_are_answered() {
    let (_dir, server) = mock_on_socket().await;
    let path = socket_path(&server);
    // The case means something only if h2 would refuse this authority as it stands.
    assert!(http::uri::Authority::try_from(path.as_str()).is_err());
    let mut client = RawClient::connect(server.path()).await;
    let answered = client
        .version_calls(
            1_000,
            |call, table| {
                // Midway: shrink the table so the two newest entries stay (te, content-type)
                // and the authority and path fall out, then grow it back; the block re-inserts
                // them, so every later index differs from before.
                let updates = if call == 500 {
                    vec![table.newest_size(2), TABLE_SIZE]
                } else {
                    Vec::new()
                };
                (Some(path.clone()), updates)
            },
            Shape::plain(),
        )
        .await;
    assert_eq!(answered, 1_000);
    // After the midway re-insertions, each request refers to the authority by index.
    let steady = client.header_block(Some(&path), &[]);
    assert!(
        !steady.windows(path.len()).any(|w| w == path.as_bytes()),
        "the client sends the authority literally: {steady:?}"
    );
    assert_eq!(
        client.table.index_of(b":authority", path.as_bytes()),
        Some(62)
    );
    server.shutdown().await;
}

#[rstest]
#[case::socket_path(|path: &str| Some(path.to_owned()))]
#[case::percent_encoded(|path: &str| Some(percent_encoded(path)))]
#[case::empty(|_: &str| Some(String::new()))]
#[case::absent(|_: &str| None)]
#[case::localhost(|_: &str| Some("localhost".to_owned()))]
#[tokio::test]
async fn every_authority_a_unix_socket_client_sends_is_answered(
    #[case] authority: fn(&str) -> Option<String>,
) {
    let (_dir, server) = mock_on_socket().await;
    let authority = authority(&socket_path(&server));
    let mut client = RawClient::connect(server.path()).await;
    // The first call inserts the authority into the table, the others refer to it.
    let answered = client
        .version_calls(3, |_, _| (authority.clone(), Vec::new()), Shape::plain())
        .await;
    assert_eq!(answered, 3);
    server.shutdown().await;
}

#[rstest]
#[case::continuation(Shape { pieces: 3, ..Shape::default() })]
#[case::padded_and_priority(Shape { pieces: 1, padding: Some(7), priority: true })]
#[case::padded_priority_and_continuation(Shape { pieces: 4, padding: Some(200), priority: true })]
#[tokio::test]
async fn header_blocks_in_any_legal_framing_are_answered(#[case] shape: Shape) {
    let (_dir, server) = mock_on_socket().await;
    let path = socket_path(&server);
    let mut client = RawClient::connect(server.path()).await;
    let answered = client
        .version_calls(20, |_, _| (Some(path.clone()), Vec::new()), shape)
        .await;
    assert_eq!(answered, 20);
    server.shutdown().await;
}
