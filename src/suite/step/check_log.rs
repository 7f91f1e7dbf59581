//! `check_log`: reads a container's log file on this host (the path the sandbox's log directory
//! and the container's log path give) and checks it in the CRI log format the kubelet reads:
//! every line `<RFC 3339 timestamp> <stdout|stderr> <F|P> <text>`, partial (`P`) records joined
//! up to their full (`F`) one, timestamps between the container's creation and the read and
//! never going back within a stream. It polls, within a bound, until the expected lines are
//! there; a malformed line fails at once, naming the line.

use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use serde::{Deserialize, Serialize};

use super::sandbox_status::now_nanos;
use super::wait_container::{check_within, default_within, is_default_within, Poll};
use super::{is_default, CheckError, Kind, Scope, StepDef, TextExpect};
use crate::world::{mismatch, StepError, World};

/// An output stream of a container.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, strum::Display)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum Stream {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

/// Which of a container's log files to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, strum::Display)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum LogFile {
    /// The file at the container's log path.
    #[default]
    Current,
    /// The file `reopen_container_log` renamed it to before reopening.
    Rotated,
}

/// `check_log`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `check_log` step: `container`, `file`, `within_ms`, `expect`"
)]
pub struct CheckLog {
    /// Container alias; its sandbox must have a log directory.
    pub container: String,
    /// The current log file or the rotated one.
    #[serde(default, skip_serializing_if = "is_default")]
    pub file: LogFile,
    /// How long to wait for the expected lines, in milliseconds.
    #[serde(default = "default_within", skip_serializing_if = "is_default_within")]
    pub within_ms: u64,
    /// Expectations.
    pub expect: CheckLogExpect,
}

/// What `check_log` checks.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a `check_log` expectation: `lines`, `exactly`"
)]
pub struct CheckLogExpect {
    /// Lines that appear in this order on their stream (others may come between, unless
    /// `exactly`); no order is expected between stdout and stderr.
    pub lines: Vec<LineExpect>,
    /// The log holds these lines and no others.
    #[serde(default, skip_serializing_if = "is_default")]
    pub exactly: bool,
}

/// One expected log line: its stream and its text (without the newline).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "an expected log line: `stream`, `equals`, `contains`, `matches`"
)]
pub struct LineExpect {
    /// The stream it was written to.
    pub stream: Stream,
    /// The whole text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub equals: Option<String>,
    /// A part of the text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contains: Option<String>,
    /// A regular expression the text matches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matches: Option<String>,
}

impl LineExpect {
    fn text(&self) -> TextExpect {
        TextExpect {
            equals: self.equals.clone(),
            contains: self.contains.clone(),
            matches: self.matches.clone(),
        }
    }

    fn holds(&self, line: &LogLine) -> bool {
        line.stream == self.stream && self.text().check("line", &line.text).is_ok()
    }
}

impl std::fmt::Display for LineExpect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.stream, self.text())
    }
}

/// Why a log line is not in the CRI log format.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LogLineError {
    /// Fewer than the four space-separated fields.
    #[error("it has fewer than four space-separated fields")]
    Fields,
    /// The first field is not an RFC 3339 time.
    #[error("timestamp {0:?} is not an RFC 3339 time")]
    Timestamp(String),
    /// The second field names no stream.
    #[error("stream {0:?} is neither stdout nor stderr")]
    Stream(String),
    /// The third field is not a tag the kubelet reads.
    #[error("tag {0:?} is neither F nor P")]
    Tag(String),
}

/// One line of a CRI log file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogRecord {
    /// When it was written, in Unix nanoseconds.
    pub timestamp: i128,
    /// The stream.
    pub stream: Stream,
    /// `P`: the text continues in the stream's next record.
    pub partial: bool,
    /// The text.
    pub text: String,
}

/// A line as the container wrote it: its records joined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine {
    /// The stream.
    pub stream: Stream,
    /// The text, without the newline.
    pub text: String,
}

impl std::fmt::Display for LogLine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {:?}", self.stream, self.text)
    }
}

/// Parses an RFC 3339 time with `Z` or a numeric offset, as Go's `time.RFC3339Nano` writes it
/// (the zone is the runtime's local one), into Unix nanoseconds.
pub fn parse_timestamp(text: &str) -> Option<i128> {
    let (utc, offset_seconds) = match text.strip_suffix('Z') {
        Some(utc) => (utc, 0),
        None => {
            let split = text.len().checked_sub(6)?;
            let (utc, offset) = (text.get(..split)?, text.get(split..)?.as_bytes());
            let sign = match offset.first()? {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            let digits = |at: usize| {
                let pair = offset.get(at..at + 2)?;
                pair.iter()
                    .all(u8::is_ascii_digit)
                    .then(|| i128::from(pair[0] - b'0') * 10 + i128::from(pair[1] - b'0'))
            };
            if offset.get(3) != Some(&b':') {
                return None;
            }
            let (hours, minutes) = (digits(1)?, digits(4)?);
            if hours > 23 || minutes > 59 {
                return None;
            }
            (utc, sign * (hours * 3600 + minutes * 60))
        }
    };
    let time = humantime::parse_rfc3339(&format!("{utc}Z")).ok()?;
    let nanos = i128::try_from(time.duration_since(UNIX_EPOCH).ok()?.as_nanos()).ok()?;
    Some(nanos - offset_seconds * 1_000_000_000)
}

/// Parses one line (without its newline) of a CRI log file.
pub fn parse_line(line: &str) -> Result<LogRecord, LogLineError> {
    let mut fields = line.splitn(4, ' ');
    let (Some(time), Some(stream), Some(tag), Some(text)) =
        (fields.next(), fields.next(), fields.next(), fields.next())
    else {
        return Err(LogLineError::Fields);
    };
    let timestamp =
        parse_timestamp(time).ok_or_else(|| LogLineError::Timestamp(time.to_owned()))?;
    let stream = match stream {
        "stdout" => Stream::Stdout,
        "stderr" => Stream::Stderr,
        other => return Err(LogLineError::Stream(other.to_owned())),
    };
    // Tags are `:`-separated; the kubelet reads the first, F or P.
    let partial = match tag.split(':').next() {
        Some("F") => false,
        Some("P") => true,
        _ => return Err(LogLineError::Tag(tag.to_owned())),
    };
    Ok(LogRecord {
        timestamp,
        stream,
        partial,
        text: text.to_owned(),
    })
}

/// A line of a log file that is not in the CRI log format.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {number} {line:?}: {problem}")]
pub struct MalformedLine {
    /// 1-based line number.
    pub number: usize,
    /// The line as read.
    pub line: String,
    /// What is wrong with it.
    pub problem: LogLineError,
}

/// Parses the complete lines of a log file's content; a last line without its newline is still
/// being written and is left for the next read.
pub fn parse_log(content: &str) -> Result<Vec<LogRecord>, MalformedLine> {
    let complete = content.rfind('\n').map_or("", |end| &content[..end]);
    if complete.is_empty() && !content.starts_with('\n') {
        return Ok(Vec::new());
    }
    complete
        .split('\n')
        .enumerate()
        .map(|(index, line)| {
            parse_line(line).map_err(|problem| MalformedLine {
                number: index + 1,
                line: line.to_owned(),
                problem,
            })
        })
        .collect()
}

/// The lines the container wrote: each stream's partial records joined up to its full one.
pub fn log_lines(records: &[LogRecord]) -> Vec<LogLine> {
    let mut lines = Vec::new();
    let mut pending: [Option<String>; 2] = [None, None];
    for record in records {
        let slot = &mut pending[record.stream as usize];
        let mut text = slot.take().unwrap_or_default();
        text.push_str(&record.text);
        if record.partial {
            *slot = Some(text);
        } else {
            lines.push(LogLine {
                stream: record.stream,
                text,
            });
        }
    }
    lines
}

/// Checks that every record was written between `earliest` and `latest` and that no stream's
/// timestamps go back. Streams are written concurrently, so their records may interleave out
/// of time order.
pub fn check_times(records: &[LogRecord], earliest: i128, latest: i128) -> Result<(), String> {
    let mut last: [Option<i128>; 2] = [None, None];
    for (index, record) in records.iter().enumerate() {
        let number = index + 1;
        if record.timestamp < earliest || record.timestamp > latest {
            return Err(format!(
                "line {number}: timestamp {} is outside the container's life so far ({earliest} to {latest})",
                record.timestamp
            ));
        }
        let previous = &mut last[record.stream as usize];
        if let Some(before) = *previous {
            if record.timestamp < before {
                return Err(format!(
                    "line {number}: {} timestamp {} goes back from {before}",
                    record.stream, record.timestamp
                ));
            }
        }
        *previous = Some(record.timestamp);
    }
    Ok(())
}

/// Where `reopen_container_log` moves a log before reopening it.
pub fn rotated_path(log: &Path) -> PathBuf {
    let mut name = log.as_os_str().to_owned();
    name.push(".1");
    PathBuf::from(name)
}

/// True when, for each stream, the lines `wanted` on it appear on it in order (and, for
/// `exactly`, it has no others). Streams are separate pipes, so no order holds between them.
fn lines_hold(wanted: &[LineExpect], lines: &[LogLine], exactly: bool) -> bool {
    [Stream::Stdout, Stream::Stderr].into_iter().all(|stream| {
        let wanted: Vec<&LineExpect> = wanted.iter().filter(|w| w.stream == stream).collect();
        let lines: Vec<&LogLine> = lines.iter().filter(|l| l.stream == stream).collect();
        if exactly {
            return wanted.len() == lines.len()
                && wanted.iter().zip(&lines).all(|(w, l)| w.holds(l));
        }
        let mut rest = lines.iter();
        wanted.iter().all(|w| rest.any(|l| w.holds(l)))
    })
}

/// The container's log path, or why it has none.
pub(super) fn log_path(world: &World, alias: &str) -> Result<PathBuf, StepError> {
    world
        .aliases
        .container(alias)?
        .log_path
        .clone()
        .ok_or_else(|| {
            StepError::Unsupported(format!(
                "container `{alias}` has no log path: its sandbox was run with `log_directory: false`"
            ))
        })
}

/// One read of a log file: its records, or `None` while it does not exist.
pub(super) fn read_records(alias: &str, path: &Path) -> Result<Option<Vec<LogRecord>>, StepError> {
    let content = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => {
            return Err(StepError::Unsupported(format!(
                "cannot read the log of `{alias}` at {}: {err}",
                path.display()
            )))
        }
    };
    let content = String::from_utf8_lossy(&content);
    parse_log(&content)
        .map(Some)
        .map_err(|bad| mismatch(format!("log of {alias}"), "CRI log lines", bad.to_string()))
}

impl StepDef for CheckLog {
    const NAME: &'static str = "check_log";
    const KIND: Kind = Kind::Check;
    const ABOUT: &'static str =
        "Reads a container's log file and checks its lines in CRI log format, polling within a bound.";

    fn expect_fields() -> &'static [&'static str] {
        super::fields_of::<CheckLogExpect>()
    }

    fn check(&self, scope: &mut Scope) -> Result<(), CheckError> {
        scope.container(&self.container)?;
        check_within(self.within_ms)?;
        if self.expect.lines.is_empty() && !self.expect.exactly {
            return Err(CheckError::empty(
                "expect.lines",
                "name at least one line (or say `exactly` for none)",
            ));
        }
        for (index, line) in self.expect.lines.iter().enumerate() {
            scope.text(&format!("expect.lines[{index}]"), &line.text())?;
        }
        Ok(())
    }

    async fn run(&self, world: &mut World) -> Result<(), StepError> {
        let alias = self.container.as_str();
        let id = world.aliases.container(alias)?.id.clone();
        let mut path = log_path(world, alias)?;
        if self.file == LogFile::Rotated {
            path = rotated_path(&path);
        }
        let created = world
            .runtime
            .container_status(&id)
            .await?
            .status
            .map_or(0, |s| s.created_at);
        let field = format!("log of {alias}");
        let mut poll = Poll::new(self.within_ms);
        loop {
            let records = read_records(alias, &path)?;
            let read_at = now_nanos();
            let seen = match records {
                Some(records) => {
                    check_times(&records, i128::from(created), read_at)
                        .map_err(|why| mismatch(field.clone(), "CRI log timestamps", why))?;
                    let lines = log_lines(&records);
                    if lines_hold(&self.expect.lines, &lines, self.expect.exactly) {
                        return Ok(());
                    }
                    let shown: Vec<String> = lines.iter().map(ToString::to_string).collect();
                    format!("[{}]", shown.join(", "))
                }
                None => format!("no {} log file", self.file),
            };
            if !poll.next().await {
                let wanted: Vec<String> =
                    self.expect.lines.iter().map(ToString::to_string).collect();
                let how = if self.expect.exactly {
                    "exactly"
                } else {
                    "in order per stream"
                };
                return Err(mismatch(
                    field,
                    format!("{how} [{}] within {} ms", wanted.join(", "), self.within_ms),
                    seen,
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    const T0: i128 = 1_475_713_029_669_794_202; // 2016-10-06T00:17:09.669794202Z

    #[rstest]
    #[case::nanoseconds("2016-10-06T00:17:09.669794202Z", Some(T0))]
    #[case::trimmed_fraction("2016-10-06T00:17:09.5Z", Some(1_475_713_029_500_000_000))]
    #[case::no_fraction("2016-10-06T00:17:09Z", Some(1_475_713_029_000_000_000))]
    #[case::east_of_utc("2016-10-06T02:17:09.669794202+02:00", Some(T0))]
    #[case::west_of_utc("2016-10-05T19:17:09.669794202-05:00", Some(T0))]
    #[case::no_zone("2016-10-06T00:17:09.669794202", None)]
    #[case::offset_without_colon("2016-10-06T00:17:09+0200", None)]
    #[case::offset_out_of_range("2016-10-06T00:17:09+24:00", None)]
    #[case::not_a_date("yesterday", None)]
    #[case::empty("", None)]
    fn timestamps_are_read_as_rfc3339_with_any_zone(
        #[case] text: &str,
        #[case] nanos: Option<i128>,
    ) {
        assert_eq!(parse_timestamp(text), nanos);
    }

    #[rstest]
    #[case::full_stdout(
        "2016-10-06T00:17:09.669794202Z stdout F hello World",
        Ok((Stream::Stdout, false, "hello World"))
    )]
    #[case::partial_stderr(
        "2016-10-06T00:17:09.669794202Z stderr P part one",
        Ok((Stream::Stderr, true, "part one"))
    )]
    #[case::empty_text("2016-10-06T00:17:09.669794202Z stdout F ", Ok((Stream::Stdout, false, "")))]
    #[case::text_keeps_its_spaces(
        "2016-10-06T00:17:09.669794202Z stdout F  two  spaces ",
        Ok((Stream::Stdout, false, " two  spaces "))
    )]
    #[case::tag_with_more_tags(
        "2016-10-06T00:17:09.669794202Z stdout F:x hi",
        Ok((Stream::Stdout, false, "hi"))
    )]
    #[case::no_text_field("2016-10-06T00:17:09.669794202Z stdout F", Err(LogLineError::Fields))]
    #[case::json_line(
        r#"{"log":"hi\n","stream":"stdout","time":"2016-10-06T00:17:09Z"}"#,
        Err(LogLineError::Fields)
    )]
    #[case::bad_time(
        "06/10/2016 stdout F hi",
        Err(LogLineError::Timestamp("06/10/2016".into()))
    )]
    #[case::bad_stream(
        "2016-10-06T00:17:09Z stdin F hi",
        Err(LogLineError::Stream("stdin".into()))
    )]
    #[case::bad_tag("2016-10-06T00:17:09Z stdout X hi", Err(LogLineError::Tag("X".into())))]
    #[case::lower_case_tag("2016-10-06T00:17:09Z stdout f hi", Err(LogLineError::Tag("f".into())))]
    fn log_lines_are_parsed_in_cri_format(
        #[case] line: &str,
        #[case] expected: Result<(Stream, bool, &str), LogLineError>,
    ) {
        let parsed = parse_line(line).map(|r| (r.stream, r.partial, r.text));
        assert_eq!(
            parsed,
            expected.map(|(stream, partial, text)| (stream, partial, text.to_owned()))
        );
    }

    #[test]
    fn a_malformed_line_is_named_by_its_number_and_text() {
        let content = "2016-10-06T00:17:09Z stdout F ok\nnot a log line\n";
        let err = parse_log(content).unwrap_err();
        assert_eq!(err.number, 2);
        assert_eq!(
            err.to_string(),
            "line 2 \"not a log line\": timestamp \"not\" is not an RFC 3339 time"
        );
    }

    #[rstest]
    #[case::empty("", 0)]
    #[case::one_line("2016-10-06T00:17:09Z stdout F a\n", 1)]
    #[case::unfinished_last_line("2016-10-06T00:17:09Z stdout F a\n2016-10-06T00:17", 1)]
    #[case::only_unfinished("2016-10-06T00:17", 0)]
    fn only_complete_lines_are_read(#[case] content: &str, #[case] records: usize) {
        assert_eq!(parse_log(content).unwrap().len(), records);
    }

    #[test]
    fn partial_records_join_per_stream_up_to_their_full_one() {
        let content = "\
2016-10-06T00:17:09Z stdout P hel
2016-10-06T00:17:09Z stderr F oops
2016-10-06T00:17:09Z stdout F lo
2016-10-06T00:17:10Z stdout P dangling
";
        let lines = log_lines(&parse_log(content).unwrap());
        assert_eq!(
            lines,
            [
                LogLine {
                    stream: Stream::Stderr,
                    text: "oops".into()
                },
                LogLine {
                    stream: Stream::Stdout,
                    text: "hello".into()
                },
            ]
        );
    }

    fn record(stream: Stream, timestamp: i128) -> LogRecord {
        LogRecord {
            timestamp,
            stream,
            partial: false,
            text: String::new(),
        }
    }

    #[rstest]
    #[case::in_order(vec![record(Stream::Stdout, 10), record(Stream::Stdout, 20)], None)]
    #[case::streams_interleave(
        vec![record(Stream::Stdout, 20), record(Stream::Stderr, 15), record(Stream::Stdout, 25)],
        None
    )]
    #[case::goes_back(
        vec![record(Stream::Stdout, 20), record(Stream::Stdout, 15)],
        Some("line 2: stdout timestamp 15 goes back from 20")
    )]
    #[case::before_the_container(vec![record(Stream::Stdout, 5)], Some("line 1: timestamp 5 is outside"))]
    #[case::after_the_read(vec![record(Stream::Stderr, 101)], Some("line 1: timestamp 101 is outside"))]
    fn timestamps_stay_in_the_window_and_never_go_back_within_a_stream(
        #[case] records: Vec<LogRecord>,
        #[case] failure: Option<&str>,
    ) {
        match (check_times(&records, 10, 100), failure) {
            (Ok(()), None) => {}
            (Err(why), Some(part)) => assert!(why.contains(part), "{why} lacks {part:?}"),
            (result, _) => panic!("got {result:?}, expected {failure:?}"),
        }
    }

    fn expect_line(stream: Stream, equals: &str) -> LineExpect {
        LineExpect {
            stream,
            equals: Some(equals.into()),
            contains: None,
            matches: None,
        }
    }

    fn line(stream: Stream, text: &str) -> LogLine {
        LogLine {
            stream,
            text: text.into(),
        }
    }

    #[rstest]
    #[case::in_order(false, true)]
    #[case::exactly_with_an_extra_line(true, false)]
    fn expected_lines_are_a_subsequence_unless_exactly(#[case] exactly: bool, #[case] holds: bool) {
        let wanted = [
            expect_line(Stream::Stdout, "a"),
            expect_line(Stream::Stderr, "c"),
        ];
        let lines = [
            line(Stream::Stdout, "a"),
            line(Stream::Stdout, "b"),
            line(Stream::Stderr, "c"),
        ];
        assert_eq!(lines_hold(&wanted, &lines, exactly), holds);
    }

    #[test]
    fn the_stream_must_match_as_well_as_the_text() {
        let wanted = [expect_line(Stream::Stdout, "a")];
        assert!(!lines_hold(&wanted, &[line(Stream::Stderr, "a")], false));
    }

    #[test]
    fn stdout_and_stderr_are_ordered_each_on_its_own() {
        let wanted = [
            expect_line(Stream::Stdout, "a"),
            expect_line(Stream::Stderr, "c"),
        ];
        let lines = [line(Stream::Stderr, "c"), line(Stream::Stdout, "a")];
        assert!(lines_hold(&wanted, &lines, true));
    }

    #[test]
    fn lines_out_of_order_do_not_hold() {
        let wanted = [
            expect_line(Stream::Stdout, "b"),
            expect_line(Stream::Stdout, "a"),
        ];
        let lines = [line(Stream::Stdout, "a"), line(Stream::Stdout, "b")];
        assert!(!lines_hold(&wanted, &lines, false));
    }
}
