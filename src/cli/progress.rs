//! How `run` shows its progress: on a terminal (and not in CI) a live bar with done/total, the
//! cases running now and the failures so far, the finished cases' lines printed above it;
//! otherwise the plain one-line-per-case output that logs and CI read.

use std::collections::BTreeSet;
use std::io::{IsTerminal as _, Write as _};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::report;
use crate::runner::{CaseOutcome, Event, Progress};

/// A progress display for `total` cases: live on an interactive terminal unless `ci`, plain
/// lines otherwise.
pub fn display(total: usize, ci: bool) -> (Progress, Option<ProgressBar>) {
    if ci || !std::io::stdout().is_terminal() {
        return (Arc::new(plain), None);
    }
    let bar = ProgressBar::with_draw_target(
        Some(u64::try_from(total).unwrap_or(u64::MAX)),
        ProgressDrawTarget::stdout(),
    );
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} cases, {elapsed} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.enable_steady_tick(Duration::from_millis(200));
    let live = Live {
        bar: bar.clone(),
        state: Mutex::new(State::default()),
    };
    (Arc::new(move |event| live.on(event)), Some(bar))
}

/// One line per finished case, nothing else.
fn plain(event: Event<'_>) {
    if let Event::Finished(case) = event {
        let mut out = std::io::stdout().lock();
        // A closed stdout must not stop the run; the reports still get written.
        let _ = writeln!(out, "{}", report::case_line(case));
        let _ = out.flush();
    }
}

#[derive(Default)]
struct State {
    running: BTreeSet<String>,
    failed: usize,
}

struct Live {
    bar: ProgressBar,
    state: Mutex<State>,
}

impl Live {
    fn on(&self, event: Event<'_>) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        match event {
            Event::Started(name) => {
                state.running.insert(name.to_owned());
            }
            Event::Finished(case) => {
                state.running.remove(&case.full_name());
                if matches!(case.outcome, CaseOutcome::Failed(_)) {
                    state.failed += 1;
                }
                self.bar.println(report::case_line(case));
                self.bar.inc(1);
            }
        }
        self.bar.set_message(message(&state));
    }
}

/// `1 failed; running: a/b, c/d`.
fn message(state: &State) -> String {
    let running: Vec<&str> = state.running.iter().map(String::as_str).collect();
    let mut out = String::new();
    if state.failed > 0 {
        out.push_str(&format!("{} failed; ", state.failed));
    }
    if !running.is_empty() {
        out.push_str("running: ");
        out.push_str(&running.join(", "));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_names_failures_and_running_cases() {
        let state = State {
            running: ["s/b".to_owned(), "s/a".to_owned()].into(),
            failed: 2,
        };
        assert_eq!(message(&state), "2 failed; running: s/a, s/b");
        assert_eq!(message(&State::default()), "");
    }
}
