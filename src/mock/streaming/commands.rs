//! The built-in command set a mock exec runs in-process, and a small shell around it: words
//! with quotes, `;` `&&` `||` `|`, the redirections `>&2` `2>&1` `>/dev/null`, and `exit N`.
//! Enough for `echo`, `cat`, `sh -c 'exit 3'`, `sh -c 'echo x >&2'`, `head -c N /dev/zero`,
//! `yes | head -c N`, `sleep`, `stty size`, `hostname [NAME]`, `pgrep NAME`; anything else
//! exits 127 as a shell would.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, watch};

use super::Attached;
use crate::mock::mounts;
use crate::mock::process::Identity;
use crate::streaming::protocol::TerminalSize;

/// Largest chunk a command writes at once (one WebSocket message).
pub(crate) const CHUNK: usize = 32 * 1024;
/// Exit status of a command killed by SIGPIPE (its reader went away), as a shell reports it.
const SIGPIPE_STATUS: i32 = 128 + 13;
/// Exit status of a command the shell cannot find.
const NOT_FOUND_STATUS: i32 = 127;

/// Which of a process's output streams a chunk came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fd {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

/// The stdio of the command a session runs: output chunks to the session, stdin from it, and
/// the terminal's size if there is a terminal.
#[derive(Debug)]
pub(crate) struct Stdio {
    out: mpsc::Sender<(Fd, Vec<u8>)>,
    stdin: TerminalIn,
    size: Option<watch::Receiver<Option<TerminalSize>>>,
    who: Arc<Identity>,
}

impl Stdio {
    /// Stdio writing to `out`, reading `stdin` (closed: end of input), on a terminal whose
    /// size `size` follows, if any.
    pub(crate) fn new(
        out: mpsc::Sender<(Fd, Vec<u8>)>,
        stdin: mpsc::UnboundedReceiver<Vec<u8>>,
        size: Option<watch::Receiver<Option<TerminalSize>>>,
    ) -> Stdio {
        Stdio {
            out,
            stdin: TerminalIn {
                rx: stdin,
                pending: Vec::new(),
            },
            size,
            who: Arc::default(),
        }
    }

    /// The same stdio for a command of a container whose process is `who` (default: root,
    /// unconfined).
    pub(crate) fn with_identity(self, who: Identity) -> Stdio {
        Stdio {
            who: Arc::new(who),
            ..self
        }
    }
}

/// The session's stdin, with what a line read took too much of.
#[derive(Debug)]
struct TerminalIn {
    rx: mpsc::UnboundedReceiver<Vec<u8>>,
    pending: Vec<u8>,
}

impl TerminalIn {
    async fn read(&mut self) -> Option<Vec<u8>> {
        if !self.pending.is_empty() {
            return Some(std::mem::take(&mut self.pending));
        }
        self.rx.recv().await
    }

    /// The next line without its `\n`; at the end of input, what is left, then `None`.
    async fn read_line(&mut self) -> Option<String> {
        loop {
            if let Some(end) = self.pending.iter().position(|b| *b == b'\n') {
                let rest = self.pending.split_off(end + 1);
                let mut line = std::mem::replace(&mut self.pending, rest);
                line.pop();
                return Some(String::from_utf8_lossy(&line).into_owned());
            }
            match self.rx.recv().await {
                Some(chunk) => self.pending.extend_from_slice(&chunk),
                None if self.pending.is_empty() => return None,
                None => {
                    let line = std::mem::take(&mut self.pending);
                    return Some(String::from_utf8_lossy(&line).into_owned());
                }
            }
        }
    }
}

/// The reader of a stream went away.
#[derive(Debug)]
struct Hangup;

/// Where a process's output stream goes.
#[derive(Debug, Clone)]
enum Sink {
    /// To the session, as this stream.
    Terminal(mpsc::Sender<(Fd, Vec<u8>)>, Fd),
    /// Into the next command of a pipeline.
    Pipe(mpsc::Sender<Vec<u8>>),
    /// `/dev/null`.
    Null,
}

impl Sink {
    async fn write(&self, bytes: Vec<u8>) -> Result<(), Hangup> {
        match self {
            Sink::Terminal(out, fd) => out.send((*fd, bytes)).await.map_err(|_| Hangup),
            Sink::Pipe(pipe) => pipe.send(bytes).await.map_err(|_| Hangup),
            Sink::Null => Ok(()),
        }
    }

    async fn print(&self, text: &str) -> Result<(), Hangup> {
        self.write(text.as_bytes().to_vec()).await
    }
}

/// Where a process's input comes from.
enum Input<'a> {
    /// The session's stdin.
    Terminal(&'a mut TerminalIn),
    /// The previous command of a pipeline.
    Pipe(mpsc::Receiver<Vec<u8>>),
}

impl Input<'_> {
    async fn read(&mut self) -> Option<Vec<u8>> {
        match self {
            Input::Terminal(stdin) => stdin.read().await,
            Input::Pipe(pipe) => pipe.recv().await,
        }
    }

    fn reborrow(&mut self) -> Input<'_> {
        match self {
            Input::Terminal(stdin) => Input::Terminal(stdin),
            // A pipe feeds one command; later ones of a list read what it left.
            Input::Pipe(pipe) => {
                let (_, empty) = mpsc::channel(1);
                Input::Pipe(std::mem::replace(pipe, empty))
            }
        }
    }
}

/// One process's stdio inside the shell.
struct Proc<'a> {
    stdin: Input<'a>,
    stdout: Sink,
    stderr: Sink,
    size: Option<watch::Receiver<Option<TerminalSize>>>,
    /// The container's process the command runs as.
    who: Arc<Identity>,
}

/// How a command ended: a status, or `exit`, which ends the whole shell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    Status(i32),
    Exit(i32),
}

impl Flow {
    fn code(self) -> i32 {
        match self {
            Flow::Status(code) | Flow::Exit(code) => code,
        }
    }
}

/// The file name of a command path: `/bin/sh` is `sh`.
pub(crate) fn base_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// Runs an exec's command line and answers its exit code.
pub(crate) async fn run(argv: &[String], stdio: &mut Stdio) -> i32 {
    let mut proc = terminal_proc(stdio);
    command(argv, &mut proc).await.code()
}

/// Runs the attached process: a shell or `cat` on the session's stdin, or a process that
/// ignores it (until the client leaves).
pub(crate) async fn attach(process: &Attached, stdio: &mut Stdio) -> i32 {
    let mut proc = terminal_proc(stdio);
    match process {
        Attached::Shell => interactive(&mut proc).await.code(),
        Attached::Cat => cat(&[], &mut proc).await,
        Attached::Silent => std::future::pending().await,
    }
}

fn terminal_proc(stdio: &mut Stdio) -> Proc<'_> {
    Proc {
        stdin: Input::Terminal(&mut stdio.stdin),
        stdout: Sink::Terminal(stdio.out.clone(), Fd::Stdout),
        stderr: Sink::Terminal(stdio.out.clone(), Fd::Stderr),
        size: stdio.size.clone(),
        who: stdio.who.clone(),
    }
}

/// A word of a script, and whether any of it was quoted (quoted words are never operators).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Word {
    text: String,
    quoted: bool,
}

/// A script's tokens.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Word(Word),
    /// `;` or a newline.
    Then,
    And,
    Or,
    Pipe,
}

/// Splits a script into words and operators, as a POSIX shell would for the subset above.
fn tokenize(script: &str) -> Result<Vec<Token>, String> {
    let mut tokens = Vec::new();
    let mut word: Option<Word> = None;
    let mut chars = script.chars().peekable();
    let finish = |word: &mut Option<Word>, tokens: &mut Vec<Token>| {
        if let Some(word) = word.take() {
            tokens.push(Token::Word(word));
        }
    };
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => finish(&mut word, &mut tokens),
            '\n' | ';' => {
                finish(&mut word, &mut tokens);
                tokens.push(Token::Then);
            }
            '&' if chars.peek() == Some(&'&') => {
                chars.next();
                finish(&mut word, &mut tokens);
                tokens.push(Token::And);
            }
            '|' if chars.peek() == Some(&'|') => {
                chars.next();
                finish(&mut word, &mut tokens);
                tokens.push(Token::Or);
            }
            '|' => {
                finish(&mut word, &mut tokens);
                tokens.push(Token::Pipe);
            }
            '\'' => {
                let current = word.get_or_insert_with(|| Word {
                    text: String::new(),
                    quoted: true,
                });
                current.quoted = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => current.text.push(c),
                        None => return Err("unterminated quoted string".to_owned()),
                    }
                }
            }
            '"' => {
                let current = word.get_or_insert_with(|| Word {
                    text: String::new(),
                    quoted: true,
                });
                current.quoted = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\' | '$' | '`')) => current.text.push(c),
                            Some(c) => {
                                current.text.push('\\');
                                current.text.push(c);
                            }
                            None => return Err("unterminated quoted string".to_owned()),
                        },
                        Some(c) => current.text.push(c),
                        None => return Err("unterminated quoted string".to_owned()),
                    }
                }
            }
            '\\' => {
                let current = word.get_or_insert_with(|| Word {
                    text: String::new(),
                    quoted: true,
                });
                match chars.next() {
                    // A backslash-newline joins lines.
                    Some('\n') => {}
                    Some(c) => current.text.push(c),
                    None => {}
                }
            }
            c => word
                .get_or_insert_with(|| Word {
                    text: String::new(),
                    quoted: false,
                })
                .text
                .push(c),
        }
    }
    finish(&mut word, &mut tokens);
    Ok(tokens)
}

/// How a pipeline joins the one before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Join {
    Always,
    IfOk,
    IfFailed,
}

/// A script as pipelines of simple commands (each a list of words).
type Pipeline = Vec<Vec<Word>>;

fn parse(tokens: Vec<Token>) -> Result<Vec<(Join, Pipeline)>, String> {
    let mut list = Vec::new();
    let mut join = Join::Always;
    let mut pipeline: Pipeline = Vec::new();
    let mut simple: Vec<Word> = Vec::new();
    let syntax = |token: &str| format!("syntax error: unexpected \"{token}\"");
    for token in tokens {
        match token {
            Token::Word(word) => simple.push(word),
            Token::Pipe => {
                if simple.is_empty() {
                    return Err(syntax("|"));
                }
                pipeline.push(std::mem::take(&mut simple));
            }
            Token::Then | Token::And | Token::Or => {
                if !simple.is_empty() {
                    pipeline.push(std::mem::take(&mut simple));
                }
                if pipeline.is_empty() {
                    if token == Token::Then && list.is_empty() {
                        continue;
                    }
                    if token != Token::Then {
                        return Err(syntax(if token == Token::And { "&&" } else { "||" }));
                    }
                    continue;
                }
                list.push((join, std::mem::take(&mut pipeline)));
                join = match token {
                    Token::And => Join::IfOk,
                    Token::Or => Join::IfFailed,
                    _ => Join::Always,
                };
            }
        }
    }
    if !simple.is_empty() {
        pipeline.push(simple);
    }
    if !pipeline.is_empty() {
        list.push((join, pipeline));
    } else if join != Join::Always {
        return Err("syntax error: unexpected end of file".to_owned());
    }
    Ok(list)
}

/// Runs a script in `proc`; boxed, since `sh -c` may nest.
fn script<'a>(
    text: &'a str,
    proc: &'a mut Proc<'_>,
) -> Pin<Box<dyn Future<Output = Flow> + Send + 'a>> {
    Box::pin(async move {
        let list = match tokenize(text).and_then(parse) {
            Ok(list) => list,
            Err(err) => {
                // The shell's own error; the output may be gone, the status stands.
                let _ = proc.stderr.print(&format!("sh: {err}\n")).await;
                return Flow::Status(2);
            }
        };
        let mut status = 0;
        for (join, pipeline) in list {
            let run = match join {
                Join::Always => true,
                Join::IfOk => status == 0,
                Join::IfFailed => status != 0,
            };
            if !run {
                continue;
            }
            match run_pipeline(pipeline, proc).await {
                Flow::Exit(code) => return Flow::Exit(code),
                Flow::Status(code) => status = code,
            }
        }
        Flow::Status(status)
    })
}

/// Runs a pipeline's commands at once, each reading the one before; the last one's status is
/// the pipeline's. `exit` inside a multi-command pipeline ends only its own command.
async fn run_pipeline(pipeline: Pipeline, proc: &mut Proc<'_>) -> Flow {
    let count = pipeline.len();
    if count == 1 {
        let words = pipeline.into_iter().next().unwrap_or_default();
        return simple(words, proc).await;
    }
    let mut stages = Vec::with_capacity(count);
    let mut input = Some(proc.stdin.reborrow());
    for (index, words) in pipeline.into_iter().enumerate() {
        let stdin = input
            .take()
            .unwrap_or_else(|| Input::Pipe(mpsc::channel(1).1));
        let (stdout, next) = if index + 1 == count {
            (proc.stdout.clone(), None)
        } else {
            let (tx, rx) = mpsc::channel(4);
            (Sink::Pipe(tx), Some(Input::Pipe(rx)))
        };
        input = next;
        let stage = Proc {
            stdin,
            stdout,
            stderr: proc.stderr.clone(),
            size: proc.size.clone(),
            who: proc.who.clone(),
        };
        stages.push(async move {
            let mut stage = stage;
            simple(words, &mut stage).await
        });
    }
    let flows = futures::future::join_all(stages).await;
    Flow::Status(flows.last().map_or(0, |flow| flow.code()))
}

/// Applies a simple command's redirections and runs it.
async fn simple(words: Vec<Word>, proc: &mut Proc<'_>) -> Flow {
    let mut argv = Vec::new();
    let mut stdout = proc.stdout.clone();
    let mut stderr = proc.stderr.clone();
    for word in words {
        match (word.quoted, word.text.as_str()) {
            (false, ">&2" | "1>&2") => stdout = stderr.clone(),
            (false, "2>&1") => stderr = stdout.clone(),
            (false, ">/dev/null" | "1>/dev/null") => stdout = Sink::Null,
            (false, "2>/dev/null") => stderr = Sink::Null,
            _ => argv.push(word.text),
        }
    }
    let mut redirected = Proc {
        stdin: proc.stdin.reborrow(),
        stdout,
        stderr,
        size: proc.size.clone(),
        who: proc.who.clone(),
    };
    let flow = Box::pin(command(&argv, &mut redirected)).await;
    flow
}

/// Runs one built-in command line.
async fn command(argv: &[String], proc: &mut Proc<'_>) -> Flow {
    let Some((name, args)) = argv.split_first() else {
        return Flow::Status(0);
    };
    if let Err(refused) = mounts::may_exec(name) {
        return Flow::Status(report(refused, proc).await);
    }
    let status = match base_name(name) {
        "true" | ":" => 0,
        "false" => 1,
        "exit" => return Flow::Exit(exit_code(args)),
        "echo" => echo(args, proc).await,
        "cat" => cat(args, proc).await,
        "head" => head(args, proc).await,
        "yes" => yes(args, proc).await,
        "sleep" => sleep(args, proc).await,
        "stty" => stty(args, proc).await,
        "touch" => report(mounts::touch(args), proc).await,
        "ls" => report(mounts::ls(args), proc).await,
        "id" => id(args, proc).await,
        "hostname" => hostname(args, proc).await,
        "pgrep" => pgrep(args, proc).await,
        "grep" => grep(args, proc).await,
        "chmod" => chmod(args, proc).await,
        "sh" | "bash" | "ash" | "dash" => match args {
            [flag, text, ..] if flag == "-c" => script(text, proc).await.code(),
            [] => interactive(proc).await.code(),
            _ => {
                let _ = proc
                    .stderr
                    .print(&format!("{name}: the mock runs only -c SCRIPT or stdin\n"))
                    .await;
                2
            }
        },
        _ => {
            let _ = proc.stderr.print(&format!("sh: {name}: not found\n")).await;
            NOT_FOUND_STATUS
        }
    };
    Flow::Status(status)
}

/// Prints what a command of the mount model answered; its status, or SIGPIPE's.
async fn report(outcome: mounts::Outcome, proc: &mut Proc<'_>) -> i32 {
    if !outcome.stdout.is_empty() && proc.stdout.print(&outcome.stdout).await.is_err() {
        return SIGPIPE_STATUS;
    }
    if !outcome.stderr.is_empty() {
        // The output may be gone; the status stands.
        let _ = proc.stderr.print(&outcome.stderr).await;
    }
    outcome.status
}

/// `exit [N]`: N modulo 256, as a shell reports it.
fn exit_code(args: &[String]) -> i32 {
    args.first()
        .and_then(|n| n.parse::<i64>().ok())
        .map_or(0, |n| i32::try_from(n.rem_euclid(256)).unwrap_or(0))
}

/// A shell reading commands from stdin, line by line, until the end of input or `exit`.
async fn interactive(proc: &mut Proc<'_>) -> Flow {
    let mut status = 0;
    loop {
        let line = match &mut proc.stdin {
            Input::Terminal(stdin) => stdin.read_line().await,
            Input::Pipe(_) => None,
        };
        let Some(line) = line else {
            return Flow::Status(status);
        };
        match script(&line, proc).await {
            Flow::Exit(code) => return Flow::Exit(code),
            Flow::Status(code) => status = code,
        }
    }
}

async fn echo(args: &[String], proc: &mut Proc<'_>) -> i32 {
    let (newline, words) = match args.split_first() {
        Some((flag, rest)) if flag == "-n" => (false, rest),
        _ => (true, args),
    };
    let mut text = words.join(" ");
    if newline {
        text.push('\n');
    }
    match proc.stdout.print(&text).await {
        Ok(()) => 0,
        Err(Hangup) => SIGPIPE_STATUS,
    }
}

async fn cat(args: &[String], proc: &mut Proc<'_>) -> i32 {
    let mut status = 0;
    let files: Vec<&str> = if args.is_empty() {
        vec!["-"]
    } else {
        args.iter().map(String::as_str).collect()
    };
    for file in files {
        match file {
            "-" => {
                while let Some(chunk) = proc.stdin.read().await {
                    if proc.stdout.write(chunk).await.is_err() {
                        return SIGPIPE_STATUS;
                    }
                }
            }
            "/dev/null" => {}
            other if proc.who.file(other).is_some() => {
                let text = proc.who.file(other).unwrap_or_default();
                if proc.stdout.print(&text).await.is_err() {
                    return SIGPIPE_STATUS;
                }
            }
            other => {
                let _ = proc
                    .stderr
                    .print(&format!(
                        "cat: can't open '{other}': No such file or directory\n"
                    ))
                    .await;
                status = 1;
            }
        }
    }
    status
}

/// `hostname`: the pod's hostname; `hostname NAME`: sethostname(2), which needs
/// CAP_SYS_ADMIN and a seccomp filter that allows it (the name set is not kept).
async fn hostname(args: &[String], proc: &mut Proc<'_>) -> i32 {
    match args {
        [] => {
            let line = format!("{}\n", proc.who.pod.hostname);
            if proc.stdout.print(&line).await.is_err() {
                return SIGPIPE_STATUS;
            }
            0
        }
        [_name] if proc.who.denies_sethostname() => {
            let _ = proc
                .stderr
                .print("hostname: sethostname: Operation not permitted\n")
                .await;
            1
        }
        [_name] => 0,
        _ => {
            let _ = proc
                .stderr
                .print("hostname: the mock runs only [NAME]\n")
                .await;
            2
        }
    }
}

/// `pgrep NAME`: PID 1 when the container's first process is NAME (the mock models no other
/// process: an exec's own command has ended before the next starts), status 1 otherwise.
async fn pgrep(args: &[String], proc: &mut Proc<'_>) -> i32 {
    match args {
        [name] if *name == proc.who.first_process => {
            if proc.stdout.print("1\n").await.is_err() {
                return SIGPIPE_STATUS;
            }
            0
        }
        [_] => 1,
        _ => {
            let _ = proc.stderr.print("pgrep: the mock runs only NAME\n").await;
            2
        }
    }
}

/// `head -c N [FILE]`: N bytes of `/dev/zero`, or of stdin.
async fn head(args: &[String], proc: &mut Proc<'_>) -> i32 {
    let mut count: Option<usize> = None;
    let mut file: Option<&str> = None;
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        if arg == "-c" {
            count = rest.next().and_then(|n| n.parse().ok());
        } else if let Some(n) = arg.strip_prefix("-c") {
            count = n.parse().ok();
        } else {
            file = Some(arg);
        }
    }
    let Some(mut left) = count else {
        let _ = proc
            .stderr
            .print("head: the mock supports only -c N [/dev/zero]\n")
            .await;
        return 1;
    };
    match file {
        Some("/dev/zero") => {
            while left > 0 {
                let chunk = left.min(CHUNK);
                if proc.stdout.write(vec![0; chunk]).await.is_err() {
                    return SIGPIPE_STATUS;
                }
                left -= chunk;
            }
            0
        }
        None | Some("-") => {
            while left > 0 {
                let Some(mut chunk) = proc.stdin.read().await else {
                    break;
                };
                chunk.truncate(left);
                left -= chunk.len();
                if proc.stdout.write(chunk).await.is_err() {
                    return SIGPIPE_STATUS;
                }
            }
            0
        }
        Some(other) => {
            let _ = proc
                .stderr
                .print(&format!("head: {other}: No such file or directory\n"))
                .await;
            1
        }
    }
}

/// `yes [WORDS]` until its reader goes.
async fn yes(args: &[String], proc: &mut Proc<'_>) -> i32 {
    let mut line = if args.is_empty() {
        "y".to_owned()
    } else {
        args.join(" ")
    };
    line.push('\n');
    let repeat = (CHUNK / line.len()).max(1);
    let chunk = line.repeat(repeat).into_bytes();
    loop {
        if proc.stdout.write(chunk.clone()).await.is_err() {
            return SIGPIPE_STATUS;
        }
    }
}

async fn sleep(args: &[String], proc: &mut Proc<'_>) -> i32 {
    let seconds = args
        .first()
        .and_then(|s| s.parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0);
    match seconds {
        Some(seconds) => {
            tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
            0
        }
        None => {
            let given = args.first().map_or("", String::as_str);
            let _ = proc
                .stderr
                .print(&format!("sleep: invalid number '{given}'\n"))
                .await;
            1
        }
    }
}

/// `stty size` answers the terminal's last size (`0 0` before any resize, as a new pty's);
/// other settings are accepted and ignored.
async fn stty(args: &[String], proc: &mut Proc<'_>) -> i32 {
    let Some(size) = &proc.size else {
        let _ = proc.stderr.print("stty: standard input: Not a tty\n").await;
        return 1;
    };
    if args.first().map(String::as_str) != Some("size") {
        return 0;
    }
    let size = (*size.borrow()).unwrap_or(TerminalSize {
        width: 0,
        height: 0,
    });
    match proc
        .stdout
        .print(&format!("{} {}\n", size.height, size.width))
        .await
    {
        Ok(()) => 0,
        Err(Hangup) => SIGPIPE_STATUS,
    }
}

/// `id [-u|-g|-G] [-n]`: the ids of the container's process.
async fn id(args: &[String], proc: &mut Proc<'_>) -> i32 {
    let (sink, text, status) = match proc.who.id(args) {
        Ok(text) => (&proc.stdout, text, 0),
        Err(err) => (&proc.stderr, err + "\n", 1),
    };
    match sink.print(&text).await {
        Ok(()) => status,
        Err(Hangup) => SIGPIPE_STATUS,
    }
}

/// `grep [-c|-q] PATTERN [FILE]`: the lines of a modelled file, or of stdin, holding
/// PATTERN (at the start, for `^PATTERN`); `-c` prints their count, `-q` nothing. Status 1
/// when none does.
async fn grep(args: &[String], proc: &mut Proc<'_>) -> i32 {
    let flag = args.first().filter(|a| *a == "-c" || *a == "-q");
    let rest = if flag.is_some() { &args[1..] } else { args };
    let text = match rest {
        [_, file] => match proc.who.file(file) {
            Some(text) => text,
            None => {
                let _ = proc
                    .stderr
                    .print(&format!("grep: {file}: No such file or directory\n"))
                    .await;
                return 2;
            }
        },
        [_] => {
            let mut input = Vec::new();
            while let Some(chunk) = proc.stdin.read().await {
                input.extend(chunk);
            }
            String::from_utf8_lossy(&input).into_owned()
        }
        _ => {
            let _ = proc
                .stderr
                .print("grep: the mock supports only [-c|-q] PATTERN [FILE]\n")
                .await;
            return 2;
        }
    };
    let pattern = &rest[0];
    let hits: Vec<&str> = text
        .lines()
        .filter(|line| match pattern.strip_prefix('^') {
            Some(start) => line.starts_with(start),
            None => line.contains(pattern.as_str()),
        })
        .collect();
    let out = match flag.map(String::as_str) {
        Some("-c") => format!("{}\n", hits.len()),
        Some(_) => String::new(),
        None => hits.iter().map(|line| format!("{line}\n")).collect(),
    };
    if !out.is_empty() && proc.stdout.print(&out).await.is_err() {
        return SIGPIPE_STATUS;
    }
    i32::from(hits.is_empty())
}

/// `chmod MODE FILE...`: denied with EPERM when the process's seccomp filter denies chmod or
/// it is not root (the files are root's); otherwise done (the mock keeps no files).
async fn chmod(args: &[String], proc: &mut Proc<'_>) -> i32 {
    let Some((_, files)) = args.split_first().filter(|(_, files)| !files.is_empty()) else {
        let _ = proc.stderr.print("chmod: missing operand\n").await;
        return 1;
    };
    if !proc.who.denies_chmod() && proc.who.uid == 0 {
        return 0;
    }
    for file in files {
        let _ = proc
            .stderr
            .print(&format!("chmod: {file}: Operation not permitted\n"))
            .await;
    }
    1
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    /// Runs `argv` with `input` on stdin; answers stdout, stderr and the exit code.
    async fn exec(argv: &[&str], input: &[u8]) -> (Vec<u8>, String, i32) {
        exec_as(Identity::default(), argv, input).await
    }

    /// [`exec`] in a container whose process is `who`.
    async fn exec_as(who: Identity, argv: &[&str], input: &[u8]) -> (Vec<u8>, String, i32) {
        let (out, mut output) = mpsc::channel(4);
        let (stdin, rx) = mpsc::unbounded_channel();
        if !input.is_empty() {
            stdin.send(input.to_vec()).unwrap();
        }
        drop(stdin);
        let mut stdio = Stdio::new(out, rx, None).with_identity(who);
        let argv: Vec<String> = argv.iter().map(|a| (*a).to_owned()).collect();
        let collect = async {
            let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
            while let Some((fd, bytes)) = output.recv().await {
                match fd {
                    Fd::Stdout => stdout.extend(bytes),
                    Fd::Stderr => stderr.extend(bytes),
                }
            }
            (stdout, stderr)
        };
        let command = async {
            let code = run(&argv, &mut stdio).await;
            drop(stdio);
            code
        };
        let (code, (stdout, stderr)) = tokio::join!(command, collect);
        (stdout, String::from_utf8(stderr).unwrap(), code)
    }

    #[rstest]
    #[case::echo(&["echo", "hello", "world"], "hello world\n", "", 0)]
    #[case::echo_by_path(&["/bin/echo", "-n", "x"], "x", "", 0)]
    #[case::exit_code(&["sh", "-c", "exit 42"], "", "", 42)]
    #[case::exit_wraps(&["sh", "-c", "exit 257"], "", "", 1)]
    #[case::stderr_apart(&["sh", "-c", "echo oops >&2; echo fine"], "fine\n", "oops\n", 0)]
    #[case::and_or(&["sh", "-c", "false && echo no || echo yes"], "yes\n", "", 0)]
    #[case::exit_stops_the_script(&["sh", "-c", "echo a; exit 3; echo b"], "a\n", "", 3)]
    #[case::quotes(&["sh", "-c", "echo 'a  b' \"c;d\""], "a  b c;d\n", "", 0)]
    #[case::nested_shell(&["sh", "-c", "sh -c 'exit 5'"], "", "", 5)]
    #[case::unknown(&["nosuch", "x"], "", "sh: nosuch: not found\n", 127)]
    #[case::unknown_in_script(&["sh", "-c", "nosuch"], "", "sh: nosuch: not found\n", 127)]
    #[case::no_tty(&["stty", "size"], "", "stty: standard input: Not a tty\n", 1)]
    #[case::bad_syntax(&["sh", "-c", "echo 'open"], "", "sh: unterminated quoted string\n", 2)]
    #[case::grep_quiet_of_stdin(&["sh", "-c", "echo 'a Read-only file system' | grep -q \"Read-only file system\""], "", "", 0)]
    #[case::grep_counts_stdin(&["sh", "-c", "echo abc | grep -c x"], "0\n", "", 1)]
    #[case::sethostname_needs_sys_admin(&["hostname", "new"], "", "hostname: sethostname: Operation not permitted\n", 1)]
    #[case::pgrep_finds_no_other_process(&["pgrep", "sleep"], "", "", 1)]
    fn built_in_commands_answer_like_a_shell(
        #[case] argv: &[&str],
        #[case] stdout: &str,
        #[case] stderr: &str,
        #[case] code: i32,
    ) {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let (out, err, status) = runtime.block_on(exec(argv, b""));
        assert_eq!(
            (
                String::from_utf8(out).unwrap().as_str(),
                err.as_str(),
                status
            ),
            (stdout, stderr, code)
        );
    }

    #[tokio::test]
    async fn a_container_sees_its_pod_and_its_first_process() {
        let pod = crate::mock::process::PodFiles::of(
            "pod-a",
            Some(&crate::cri::v1::DnsConfig {
                servers: vec!["10.10.10.10".to_owned()],
                searches: vec!["example.test".to_owned()],
                options: vec!["ndots:8".to_owned()],
            }),
        );
        let who = Identity {
            sys_admin: true,
            first_process: "top".to_owned(),
            pod,
            ..Identity::default()
        };
        let run = |argv: &'static [&'static str]| exec_as(who.clone(), argv, b"");
        let text =
            |(out, err, code): (Vec<u8>, String, i32)| (String::from_utf8(out).unwrap(), err, code);
        assert_eq!(
            text(run(&["hostname"]).await),
            ("pod-a\n".into(), String::new(), 0)
        );
        assert_eq!(
            text(run(&["hostname", "other"]).await),
            (String::new(), String::new(), 0)
        );
        assert_eq!(
            text(run(&["pgrep", "top"]).await),
            ("1\n".into(), String::new(), 0)
        );
        assert_eq!(
            text(run(&["cat", "/etc/resolv.conf"]).await).0,
            "nameserver 10.10.10.10\nsearch example.test\noptions ndots:8\n"
        );
        let filtered = Identity {
            seccomp: crate::mock::process::Seccomp::Filter(vec!["sethostname".to_owned()]),
            ..who.clone()
        };
        assert_eq!(exec_as(filtered, &["hostname", "other"], b"").await.2, 1);
    }

    #[tokio::test]
    async fn cat_copies_stdin_until_it_closes() {
        let (out, err, code) = exec(&["cat"], b"some\nbytes").await;
        assert_eq!(
            (out.as_slice(), err.as_str(), code),
            (&b"some\nbytes"[..], "", 0)
        );
    }

    #[tokio::test]
    async fn head_of_dev_zero_gives_exactly_n_bytes() {
        let (out, _, code) = exec(&["head", "-c", "1048577", "/dev/zero"], b"").await;
        assert_eq!((out.len(), code), (1_048_577, 0));
        assert!(out.iter().all(|b| *b == 0));
    }

    #[tokio::test]
    async fn yes_into_head_stops_when_head_has_enough() {
        let (out, _, code) = exec(&["sh", "-c", "yes | head -c 100001"], b"").await;
        assert_eq!((out.len(), code), (100_001, 0));
        assert!(out.starts_with(b"y\ny\n"));
    }

    #[tokio::test]
    async fn a_shell_without_arguments_runs_its_stdin() {
        let (out, _, code) = exec(&["sh"], b"echo one\necho two\nexit 4\necho three\n").await;
        assert_eq!((out.as_slice(), code), (&b"one\ntwo\n"[..], 4));
    }

    #[tokio::test]
    async fn stty_size_answers_the_last_resize() {
        let (out, mut output) = mpsc::channel(4);
        let (_stdin, rx) = mpsc::unbounded_channel();
        let (size, sizes) = watch::channel(None);
        let mut stdio = Stdio::new(out, rx, Some(sizes));
        let argv = vec!["stty".to_owned(), "size".to_owned()];
        assert_eq!(run(&argv, &mut stdio).await, 0);
        size.send_replace(Some(TerminalSize {
            width: 120,
            height: 40,
        }));
        assert_eq!(run(&argv, &mut stdio).await, 0);
        drop(stdio);
        let mut seen = Vec::new();
        while let Some((_, bytes)) = output.recv().await {
            seen.extend(bytes);
        }
        assert_eq!(String::from_utf8(seen).unwrap(), "0 0\n40 120\n");
    }
}
