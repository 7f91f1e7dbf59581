//! Lets the mock answer whatever `:authority` a gRPC client sends over a unix socket.
//!
//! h2, the HTTP/2 stack under tonic, resets every request whose `:authority` is not a URI
//! authority (hyperium/h2#487). Clients on unix sockets send exactly that: grpc-go dialling a
//! bare path through a custom dialer (crictl <= 1.26, the kubelet) and grpc-java send the path,
//! gRPC C-core >= 1.57 its percent-encoding; containerd and CRI-O, grpc-go servers, accept them
//! all. [`AuthorityFix`] sits between the socket and h2: it follows the client's frames, decodes
//! every header block with the client's HPACK state and hands h2 the same fields re-encoded
//! without the dynamic table, with `localhost` where h2 would refuse the authority. Every other
//! frame passes through byte for byte; anything it cannot follow goes to h2 as sent, to judge.
//!
//! HPACK comes from `loona-hpack`: the fork of `hpack` kept by the loona HTTP/2 project (last
//! release November 2024, made to pass h2spec), with Huffman decoding and the table-size rules.
//! `hpack` itself has had no release since 2016 and pulls in `log` 0.3; `httlib-hpack` copies
//! its input for every field it decodes. loona's Huffman decoder is slow (see
//! [`without_huffman`]), so Huffman strings are decoded first by `httlib-huffman`, which
//! decodes from static tables.

use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use loona_hpack::encoder::encode_integer_into;
use loona_hpack::Decoder;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tonic::transport::server::Connected;

/// `PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n`, which opens every client connection.
const PREFACE_LEN: usize = 24;
const FRAME_HEADER_LEN: usize = 9;
const HEADERS: u8 = 0x1;
const CONTINUATION: u8 = 0x9;
const END_STREAM: u8 = 0x1;
const END_HEADERS: u8 = 0x4;
const PADDED: u8 = 0x8;
const PRIORITY: u8 = 0x20;
/// Stream dependency (4 bytes) and weight (1) of a HEADERS frame with PRIORITY.
const PRIORITY_LEN: usize = 5;
/// The largest frame payload every HTTP/2 peer must accept (RFC 9113 §4.2): rewritten blocks
/// are cut to it, so they fit whatever maximum h2 advertised.
const MAX_FRAME_PAYLOAD: usize = 16_384;
/// A header block that grows past this is handed on as sent rather than buffered further.
const MAX_BLOCK: usize = 16 * 1024 * 1024;
/// Read size from the socket; one default-sized frame and its header.
const READ_CHUNK: usize = MAX_FRAME_PAYLOAD + FRAME_HEADER_LEN;
/// What h2 gets instead of an authority it would refuse; what Kubernetes' own clients send.
const FALLBACK_AUTHORITY: &[u8] = b"localhost";

/// A server-side connection whose client->server header blocks are normalised for h2 (see the
/// module doc); writes and everything else pass straight through.
pub(crate) struct AuthorityFix<S> {
    inner: S,
    /// Bytes from the client not yet handed on: `input[start..end]`.
    input: Vec<u8>,
    start: usize,
    end: usize,
    /// Rewritten frames to hand on before any more input: `output[out_start..]`.
    output: Vec<u8>,
    out_start: usize,
    /// Bytes at the front of the input that pass unchanged: the preface, the rest of a frame,
    /// or everything once the connection is transparent.
    forward: usize,
    /// Set once the stream stops making sense as HTTP/2; h2 then sees the rest as sent.
    transparent: bool,
    /// The client's HPACK state, kept in step with its encoder.
    decoder: Decoder<'static>,
    /// A header block still waiting for its END_HEADERS.
    pending: Option<Pending>,
    /// The block being rewritten with its Huffman strings decoded, then its re-encoded fields;
    /// kept to reuse their allocations.
    plain: Vec<u8>,
    scratch: Vec<u8>,
    /// The client closed its side.
    eof: bool,
    /// Whether this connection's first replaced authority was logged.
    logged: bool,
}

/// A header block spread over HEADERS and CONTINUATION frames.
#[derive(Debug)]
struct Pending {
    stream: u32,
    /// END_STREAM of the HEADERS frame that opened it.
    end_stream: bool,
    priority: Option<[u8; PRIORITY_LEN]>,
    /// The frames as received, handed on unchanged if the block cannot be rewritten.
    raw: Vec<u8>,
    /// The block's fragments, joined.
    block: Vec<u8>,
}

/// One parsed frame header.
#[derive(Debug, Clone, Copy)]
struct FrameHead {
    len: usize,
    kind: u8,
    flags: u8,
    stream: u32,
}

impl FrameHead {
    fn parse(bytes: &[u8]) -> Option<Self> {
        let head: &[u8; FRAME_HEADER_LEN] = bytes.get(..FRAME_HEADER_LEN)?.try_into().ok()?;
        Some(Self {
            len: usize::from(head[0]) << 16 | usize::from(head[1]) << 8 | usize::from(head[2]),
            kind: head[3],
            flags: head[4],
            stream: u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff,
        })
    }
}

impl<S> AuthorityFix<S> {
    /// Wraps a freshly accepted connection, before the client's preface.
    pub(crate) fn new(inner: S) -> Self {
        Self {
            inner,
            input: vec![0; READ_CHUNK],
            start: 0,
            end: 0,
            output: Vec::new(),
            out_start: 0,
            forward: PREFACE_LEN,
            transparent: false,
            decoder: Decoder::new(),
            pending: None,
            plain: Vec::new(),
            scratch: Vec::new(),
            eof: false,
            logged: false,
        }
    }

    /// Copies ready bytes into `buf`; false when there are none.
    fn deliver(&mut self, buf: &mut ReadBuf<'_>) -> bool {
        if self.out_start < self.output.len() {
            let n = buf.remaining().min(self.output.len() - self.out_start);
            buf.put_slice(&self.output[self.out_start..self.out_start + n]);
            self.out_start += n;
            if self.out_start == self.output.len() {
                self.output.clear();
                self.out_start = 0;
            }
            return true;
        }
        if self.forward > 0 && self.start < self.end {
            let n = buf.remaining().min(self.end - self.start).min(self.forward);
            buf.put_slice(&self.input[self.start..self.start + n]);
            self.start += n;
            if !self.transparent {
                self.forward -= n;
            }
            return true;
        }
        false
    }

    /// Looks at the next frame in the input; false when it needs more bytes to decide.
    fn advance(&mut self) -> bool {
        if self.transparent {
            self.forward = usize::MAX;
            return true;
        }
        let Some(head) = FrameHead::parse(&self.input[self.start..self.end]) else {
            return false;
        };
        let is_header_frame = head.kind == HEADERS || head.kind == CONTINUATION;
        if self.pending.is_some() && head.kind != CONTINUATION {
            // RFC 9113 §6.10: nothing may interleave with a header block; h2 says so itself.
            self.give_up();
            return true;
        }
        if !is_header_frame {
            self.forward = FRAME_HEADER_LEN + head.len;
            return true;
        }
        let frame_len = FRAME_HEADER_LEN + head.len;
        if self.end - self.start < frame_len {
            if frame_len > self.input.len() {
                self.input.resize(frame_len, 0);
            }
            return false;
        }
        let frame_start = self.start;
        self.start += frame_len;
        let frame = frame_start..frame_start + frame_len;
        if head.kind == HEADERS {
            self.headers_frame(head, frame);
        } else {
            self.continuation_frame(head, frame);
        }
        true
    }

    /// A HEADERS frame (whole, at `frame` in the input): rewritten now if it ends its block,
    /// else held until the CONTINUATION that does.
    fn headers_frame(&mut self, head: FrameHead, frame: std::ops::Range<usize>) {
        let bytes = &self.input[frame.clone()];
        let Some((priority, fragment)) = split_headers_payload(head, &bytes[FRAME_HEADER_LEN..])
        else {
            // Padding longer than the frame and the like: h2's to refuse.
            self.pass_on(frame);
            return;
        };
        let end_stream = head.flags & END_STREAM != 0;
        if head.flags & END_HEADERS == 0 {
            self.pending = Some(Pending {
                stream: head.stream,
                end_stream,
                priority,
                raw: bytes.to_vec(),
                block: bytes[FRAME_HEADER_LEN..][fragment].to_vec(),
            });
            return;
        }
        let block = &self.input[frame.start + FRAME_HEADER_LEN..frame.end][fragment];
        match reencode(
            &mut self.decoder,
            block,
            &mut self.plain,
            &mut self.scratch,
            &mut self.logged,
        ) {
            Ok(()) => write_frames(
                &mut self.output,
                head.stream,
                end_stream,
                priority,
                &self.scratch,
            ),
            Err(err) => {
                tracing::debug!(%err, "cannot decode a client's header block; h2 gets it as sent");
                self.pass_on(frame);
            }
        }
    }

    /// A CONTINUATION frame (whole, at `frame` in the input) of the pending block.
    fn continuation_frame(&mut self, head: FrameHead, frame: std::ops::Range<usize>) {
        let fits = self.pending.as_ref().is_some_and(|pending| {
            pending.stream == head.stream && pending.block.len() + head.len <= MAX_BLOCK
        });
        if !fits {
            // A CONTINUATION with no block open, on another stream, or one block too many.
            self.pass_on(frame);
            return;
        }
        let Some(mut pending) = self.pending.take() else {
            return;
        };
        let bytes = &self.input[frame.clone()];
        pending.raw.extend_from_slice(bytes);
        pending.block.extend_from_slice(&bytes[FRAME_HEADER_LEN..]);
        if head.flags & END_HEADERS == 0 {
            self.pending = Some(pending);
            return;
        }
        match reencode(
            &mut self.decoder,
            &pending.block,
            &mut self.plain,
            &mut self.scratch,
            &mut self.logged,
        ) {
            Ok(()) => write_frames(
                &mut self.output,
                pending.stream,
                pending.end_stream,
                pending.priority,
                &self.scratch,
            ),
            Err(err) => {
                tracing::debug!(%err, "cannot decode a client's header block; h2 gets it as sent");
                self.output.extend_from_slice(&pending.raw);
                self.transparent = true;
            }
        }
    }

    /// Hands on the frame at `frame` and all that follows as sent (after any held frames).
    fn pass_on(&mut self, frame: std::ops::Range<usize>) {
        self.give_up();
        // The frame was consumed from the input; put the cursor back so it goes out first.
        self.start = frame.start;
    }

    /// Stops rewriting: frames held back go out as received, and everything after them too.
    fn give_up(&mut self) {
        if let Some(pending) = self.pending.take() {
            self.output.extend_from_slice(&pending.raw);
        }
        self.transparent = true;
        self.forward = usize::MAX;
    }

    /// Makes room at the end of the input for another read.
    fn make_room(&mut self) {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
        if self.input.len() - self.end < READ_CHUNK && self.start > 0 {
            self.input.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if self.input.len() == self.end {
            let grown = self.input.len() + READ_CHUNK;
            self.input.resize(grown, 0);
        }
    }
}

/// Splits a HEADERS payload into its priority fields and the range of its block fragment,
/// dropping padding; `None` if the declared padding or priority do not fit.
fn split_headers_payload(
    head: FrameHead,
    payload: &[u8],
) -> Option<(Option<[u8; PRIORITY_LEN]>, std::ops::Range<usize>)> {
    let mut from = 0;
    let mut padding = 0;
    if head.flags & PADDED != 0 {
        padding = usize::from(*payload.first()?);
        from = 1;
    }
    let mut priority = None;
    if head.flags & PRIORITY != 0 {
        priority = Some(payload.get(from..from + PRIORITY_LEN)?.try_into().ok()?);
        from += PRIORITY_LEN;
    }
    let to = payload.len().checked_sub(padding)?;
    (from <= to).then_some((priority, from..to))
}

/// Decodes `block` with the client's table and writes its fields to `out` as literals without
/// indexing (so h2's table stays empty and cannot drift from the client's), an authority h2
/// would refuse replaced.
fn reencode(
    decoder: &mut Decoder<'static>,
    block: &[u8],
    plain: &mut Vec<u8>,
    out: &mut Vec<u8>,
    logged: &mut bool,
) -> Result<(), loona_hpack::decoder::DecoderError> {
    let block = if without_huffman(block, plain) {
        &plain[..]
    } else {
        block
    };
    out.clear();
    decoder.decode_with_cb(block, |name, value| {
        let value: &[u8] =
            if name.as_ref() == b":authority" && http::uri::Authority::try_from(&*value).is_err() {
                if !*logged {
                    *logged = true;
                    tracing::debug!(
                        authority = %String::from_utf8_lossy(&value),
                        "client's :authority is no URI authority; h2 is given localhost"
                    );
                }
                FALLBACK_AUTHORITY
            } else {
                &value
            };
        push_literal(out, &name, value);
    })
}

/// Copies `block` into `out` with each Huffman-coded string literal (RFC 7541 §5.2) written
/// out plain; false if it does not parse, and then the HPACK decoder gets it as it is.
///
/// loona-hpack rebuilds its Huffman table (nested hash maps) for every coded string and walks
/// it bit by bit, some microseconds a string; h2 clients never index `:path`, so each request
/// would pay. httlib-huffman decodes from static tables in a fraction of that.
fn without_huffman(block: &[u8], out: &mut Vec<u8>) -> bool {
    out.clear();
    let mut at = 0;
    while let Some(&first) = block.get(at) {
        // The field's representation by its first bits (§6): the index's prefix, and whether
        // string literals follow.
        let (prefix, literal) = if first & 0x80 != 0 {
            (7, false)
        } else if first & 0x40 != 0 {
            (6, true)
        } else if first & 0x20 != 0 {
            (5, false)
        } else {
            (4, true)
        };
        let Some((index, used)) = hpack_integer(&block[at..], prefix) else {
            return false;
        };
        out.extend_from_slice(&block[at..at + used]);
        at += used;
        if !literal {
            continue;
        }
        // Index 0: the name is a literal too.
        for _ in 0..if index == 0 { 2 } else { 1 } {
            match plain_string(block, at, out) {
                Some(next) => at = next,
                None => return false,
            }
        }
    }
    true
}

/// Copies the string literal at `block[at..]` into `out`, decoding Huffman; answers its end.
fn plain_string(block: &[u8], at: usize, out: &mut Vec<u8>) -> Option<usize> {
    let first = *block.get(at)?;
    let (len, used) = hpack_integer(&block[at..], 7)?;
    let start = at + used;
    let end = start.checked_add(len)?;
    let raw = block.get(start..end)?;
    if first & 0x80 == 0 {
        out.extend_from_slice(&block[at..end]);
    } else {
        let mut decoded = Vec::with_capacity(len * 8 / 5);
        httlib_huffman::decode(raw, &mut decoded, httlib_huffman::DecoderSpeed::FiveBits).ok()?;
        push_string(out, &decoded);
    }
    Some(end)
}

/// An HPACK integer with a `prefix`-bit prefix (§5.1): its value and the bytes it took.
fn hpack_integer(buf: &[u8], prefix: u8) -> Option<(usize, usize)> {
    let max = (1usize << prefix) - 1;
    let mut value = usize::from(*buf.first()?) & max;
    if value < max {
        return Some((value, 1));
    }
    for (at, &byte) in buf.iter().enumerate().skip(1) {
        // Five continuation bytes already exceed any length or index a peer may use.
        if at > 5 {
            return None;
        }
        value += usize::from(byte & 0x7f) << (7 * (at - 1));
        if byte & 0x80 == 0 {
            return Some((value, at + 1));
        }
    }
    None
}

/// One "literal header field without indexing, new name" (RFC 7541 §6.2.2), no Huffman.
fn push_literal(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    out.push(0);
    push_string(out, name);
    push_string(out, value);
}

fn push_string(out: &mut Vec<u8>, bytes: &[u8]) {
    // Writing into a Vec cannot fail; the io::Result is the crate's generic writer's.
    if encode_integer_into(bytes.len(), 7, 0, out).is_ok() {
        out.extend_from_slice(bytes);
    }
}

/// Frames `block` for h2 as a HEADERS frame plus as many CONTINUATIONs as it needs.
fn write_frames(
    out: &mut Vec<u8>,
    stream: u32,
    end_stream: bool,
    priority: Option<[u8; PRIORITY_LEN]>,
    block: &[u8],
) {
    let room = MAX_FRAME_PAYLOAD - priority.map_or(0, |p| p.len());
    let (first, mut rest) = block.split_at(room.min(block.len()));
    let mut flags = if end_stream { END_STREAM } else { 0 };
    if priority.is_some() {
        flags |= PRIORITY;
    }
    if rest.is_empty() {
        flags |= END_HEADERS;
    }
    let priority = priority.as_ref().map_or(&[][..], |p| &p[..]);
    push_frame_head(out, priority.len() + first.len(), HEADERS, flags, stream);
    out.extend_from_slice(priority);
    out.extend_from_slice(first);
    while !rest.is_empty() {
        let (chunk, after) = rest.split_at(MAX_FRAME_PAYLOAD.min(rest.len()));
        rest = after;
        let flags = if rest.is_empty() { END_HEADERS } else { 0 };
        push_frame_head(out, chunk.len(), CONTINUATION, flags, stream);
        out.extend_from_slice(chunk);
    }
}

fn push_frame_head(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, stream: u32) {
    // `len` is at most MAX_FRAME_PAYLOAD, well inside the 24-bit length field.
    let len = (len as u32).to_be_bytes();
    out.extend_from_slice(&[len[1], len[2], len[3], kind, flags]);
    out.extend_from_slice(&stream.to_be_bytes());
}

impl<S: AsyncRead + Unpin> AsyncRead for AuthorityFix<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        // Hand h2 all that is ready in one read, as the bare socket would: a request's HEADERS
        // and DATA then reach it together.
        let mut delivered = false;
        loop {
            if buf.remaining() == 0 {
                return Poll::Ready(Ok(()));
            }
            if this.deliver(buf) {
                delivered = true;
                continue;
            }
            if this.forward == 0 && this.advance() {
                continue;
            }
            if delivered {
                return Poll::Ready(Ok(()));
            }
            if this.eof {
                if this.start < this.end {
                    // A frame the client never finished: h2 gets the piece and the end.
                    this.give_up();
                    continue;
                }
                return Poll::Ready(Ok(()));
            }
            this.make_room();
            let mut room = ReadBuf::new(&mut this.input[this.end..]);
            ready!(Pin::new(&mut this.inner).poll_read(cx, &mut room))?;
            let read = room.filled().len();
            if read == 0 {
                this.eof = true;
            }
            this.end += read;
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for AuthorityFix<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

impl<S: Connected> Connected for AuthorityFix<S> {
    type ConnectInfo = S::ConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        self.inner.connect_info()
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncReadExt;

    use super::*;

    const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

    fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        push_frame_head(&mut out, payload.len(), kind, flags, stream);
        out.extend_from_slice(payload);
        out
    }

    /// A header block of literal fields without indexing, as `reencode` writes them.
    fn block(fields: &[(&str, &str)]) -> Vec<u8> {
        let mut out = Vec::new();
        for (name, value) in fields {
            push_literal(&mut out, name.as_bytes(), value.as_bytes());
        }
        out
    }

    /// What h2 would read when the client sends `input`.
    async fn through(input: &[u8]) -> Vec<u8> {
        let mut fixed = AuthorityFix::new(input);
        let mut out = Vec::new();
        fixed.read_to_end(&mut out).await.unwrap();
        out
    }

    /// Splits what h2 would read (after the preface) into frames.
    fn frames(mut bytes: &[u8]) -> Vec<(FrameHead, Vec<u8>)> {
        let mut out = Vec::new();
        while let Some(head) = FrameHead::parse(bytes) {
            let payload = bytes[FRAME_HEADER_LEN..FRAME_HEADER_LEN + head.len].to_vec();
            bytes = &bytes[FRAME_HEADER_LEN + head.len..];
            out.push((head, payload));
        }
        assert!(bytes.is_empty(), "a partial frame at the end");
        out
    }

    fn decode(block: &[u8]) -> Vec<(String, String)> {
        Decoder::new()
            .decode(block)
            .unwrap()
            .into_iter()
            .map(|(n, v)| (String::from_utf8(n).unwrap(), String::from_utf8(v).unwrap()))
            .collect()
    }

    #[tokio::test]
    async fn frames_other_than_header_blocks_pass_byte_for_byte() {
        let mut input = PREFACE.to_vec();
        input.extend(frame(0x4, 0, 0, &[0, 3, 0, 0, 0, 100]));
        input.extend(frame(0x0, PADDED | END_STREAM, 1, &[2, b'h', b'i', 0, 0]));
        input.extend(frame(0x8, 0, 0, &[0, 0, 1, 0]));
        assert_eq!(through(&input).await, input);
    }

    #[tokio::test]
    async fn a_socket_path_authority_becomes_localhost_and_the_rest_stays() {
        let fields = [
            (":method", "POST"),
            (":authority", "/run/containerd/containerd.sock"),
            (":path", "/runtime.v1.RuntimeService/Version"),
        ];
        let mut input = PREFACE.to_vec();
        input.extend(frame(HEADERS, END_HEADERS, 1, &block(&fields)));
        let out = through(&input).await;
        assert_eq!(&out[..PREFACE.len()], PREFACE);
        let frames = frames(&out[PREFACE.len()..]);
        assert_eq!(frames.len(), 1);
        assert_eq!(frames[0].0.flags, END_HEADERS);
        let decoded = decode(&frames[0].1);
        assert_eq!(
            decoded[1],
            (":authority".to_owned(), "localhost".to_owned())
        );
        assert_eq!(decoded[2].1, "/runtime.v1.RuntimeService/Version");
    }

    #[tokio::test]
    async fn a_block_in_continuations_with_padding_and_priority_is_joined() {
        let fields = [(":method", "POST"), (":authority", "%2Ftmp%2Fm.sock")];
        let whole = block(&fields);
        let (a, b) = whole.split_at(10);
        let mut headers = vec![3];
        headers.extend_from_slice(&[0, 0, 0, 0, 200]);
        headers.extend_from_slice(a);
        headers.extend_from_slice(&[0, 0, 0]);
        let mut input = PREFACE.to_vec();
        input.extend(frame(HEADERS, PADDED | PRIORITY | END_STREAM, 3, &headers));
        input.extend(frame(CONTINUATION, END_HEADERS, 3, b));
        let out = through(&input).await;
        let frames = frames(&out[PREFACE.len()..]);
        assert_eq!(frames.len(), 1);
        let (head, payload) = &frames[0];
        assert_eq!(head.kind, HEADERS);
        assert_eq!(head.flags, PRIORITY | END_STREAM | END_HEADERS);
        assert_eq!(&payload[..PRIORITY_LEN], &[0, 0, 0, 0, 200]);
        let decoded = decode(&payload[PRIORITY_LEN..]);
        assert_eq!(decoded[1].1, "localhost");
    }

    #[tokio::test]
    async fn a_rewritten_block_larger_than_a_frame_is_split_into_continuations() {
        let big = "x".repeat(40_000);
        let fields = [(":authority", "/tmp/m.sock"), ("x-big", big.as_str())];
        let whole = block(&fields);
        let mut input = PREFACE.to_vec();
        let mut chunks = whole.chunks(16_000).peekable();
        let mut kind = HEADERS;
        while let Some(chunk) = chunks.next() {
            let flags = if chunks.peek().is_none() {
                END_HEADERS
            } else {
                0
            };
            input.extend(frame(kind, flags, 1, chunk));
            kind = CONTINUATION;
        }
        let out = through(&input).await;
        let frames = frames(&out[PREFACE.len()..]);
        assert_eq!(frames.len(), 3);
        assert!(frames.iter().all(|(head, _)| head.len <= MAX_FRAME_PAYLOAD));
        assert_eq!(frames[0].0.kind, HEADERS);
        assert!(frames[1..]
            .iter()
            .all(|(head, _)| head.kind == CONTINUATION));
        assert_eq!(frames[2].0.flags, END_HEADERS);
        let joined: Vec<u8> = frames.iter().flat_map(|(_, p)| p.clone()).collect();
        // Compared as a boolean: a failure must not print 40 kB of x.
        let expected = [
            (":authority".to_owned(), "localhost".to_owned()),
            ("x-big".to_owned(), big),
        ];
        assert!(
            decode(&joined) == expected,
            "the split block decodes differently"
        );
    }

    #[test]
    fn huffman_strings_come_out_plain_and_decode_as_before() {
        // RFC 7541 C.4.1: ":method GET, :scheme http, :path /, :authority www.example.com"
        // with the authority Huffman-coded, then a new-name literal with both strings coded
        // (C.4.3's custom-key: custom-value).
        let mut block = vec![0x82, 0x86, 0x84, 0x41, 0x8c];
        block.extend_from_slice(&[
            0xf1, 0xe3, 0xc2, 0xe5, 0xf2, 0x3a, 0x6b, 0xa0, 0xab, 0x90, 0xf4, 0xff,
        ]);
        block.extend_from_slice(&[0x40, 0x88, 0x25, 0xa8, 0x49, 0xe9, 0x5b, 0xa9, 0x7d, 0x7f]);
        block.extend_from_slice(&[0x89, 0x25, 0xa8, 0x49, 0xe9, 0x5b, 0xb8, 0xe8, 0xb4, 0xbf]);
        let mut plain = Vec::new();
        assert!(without_huffman(&block, &mut plain));
        assert!(plain.windows(15).any(|w| w == b"www.example.com"));
        assert_eq!(decode(&plain), decode(&block));
        assert_eq!(
            decode(&plain)[4],
            ("custom-key".to_owned(), "custom-value".to_owned())
        );
    }

    #[test]
    fn a_truncated_block_is_left_to_the_hpack_decoder() {
        let mut plain = Vec::new();
        // A literal whose value claims 12 bytes and has 2.
        assert!(!without_huffman(&[0x41, 0x8c, 0xf1, 0xe3], &mut plain));
    }

    #[tokio::test]
    async fn an_undecodable_block_reaches_h2_as_sent() {
        let mut input = PREFACE.to_vec();
        // Index 70 of an empty dynamic table.
        input.extend(frame(HEADERS, END_HEADERS, 1, &[0x80 | 70]));
        input.extend(frame(0x0, END_STREAM, 1, b"after"));
        assert_eq!(through(&input).await, input);
    }
}
