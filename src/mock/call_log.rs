//! The mock's record of the CRI calls it received: one record per call in arrival order,
//! made when the call arrives and completed with its answer's status.

use std::borrow::Cow;
use std::collections::VecDeque;

use crate::cri::control::CallRecord;

/// Records kept at most; older ones are dropped so a long-running `cri-harness mock` does not
/// grow without bound (sequence numbers keep counting).
const MAX_RECORDS: usize = 100_000;

/// Status code shown for a call still waiting for its answer (an injected delay).
const IN_FLIGHT_CODE: tonic::Code = tonic::Code::Unknown;
const IN_FLIGHT_MESSAGE: &str = "no answer yet: the call is still in flight";

/// Identifies one record across log clears and resets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ticket {
    generation: u64,
    seq: u64,
}

/// One call as logged; cheaper than a [`CallRecord`] on the hot path (no copies of static
/// names), converted when read.
#[derive(Debug)]
struct Entry {
    seq: u64,
    method: &'static str,
    request: String,
    code: tonic::Code,
    message: Cow<'static, str>,
}

impl Entry {
    fn to_record(&self) -> CallRecord {
        CallRecord {
            seq: self.seq,
            method: self.method.to_owned(),
            request: self.request.clone(),
            code: self.code as i32,
            message: self.message.clone().into_owned(),
        }
    }
}

/// The ordered call log.
#[derive(Debug, Default)]
pub(crate) struct CallLog {
    records: VecDeque<Entry>,
    next_seq: u64,
    /// Bumped by `reset`, so an answer arriving after a Reset cannot complete a new record
    /// that happens to reuse its sequence number.
    generation: u64,
}

impl CallLog {
    /// Records an arriving call; its status stays "in flight" until `finish`.
    pub(crate) fn arrive(&mut self, method: &'static str, request: String) -> Ticket {
        let seq = self.next_seq;
        self.next_seq += 1;
        if self.records.len() == MAX_RECORDS {
            self.records.pop_front();
        }
        self.records.push_back(Entry {
            seq,
            method,
            request,
            code: IN_FLIGHT_CODE,
            message: Cow::Borrowed(IN_FLIGHT_MESSAGE),
        });
        Ticket {
            generation: self.generation,
            seq,
        }
    }

    /// Completes the record of `ticket` with the answer's code and message, if it is still
    /// in the log.
    pub(crate) fn finish(&mut self, ticket: Ticket, code: tonic::Code, message: &str) {
        if ticket.generation != self.generation {
            return;
        }
        // Records are contiguous in seq (only the oldest are dropped), so index by offset.
        let Some(first) = self.records.front().map(|r| r.seq) else {
            return;
        };
        let Some(offset) = ticket.seq.checked_sub(first) else {
            return;
        };
        let record = usize::try_from(offset)
            .ok()
            .and_then(|offset| self.records.get_mut(offset));
        if let Some(record) = record {
            record.code = code;
            record.message = if message.is_empty() {
                Cow::Borrowed("")
            } else {
                Cow::Owned(message.to_owned())
            };
        }
    }

    /// Every record, oldest first; `clear` empties the log (sequence numbers go on).
    pub(crate) fn read(&mut self, clear: bool) -> Vec<CallRecord> {
        let records = self.records.iter().map(Entry::to_record).collect();
        if clear {
            self.records.clear();
        }
        records
    }

    /// Empties the log and restarts sequence numbers from 0.
    pub(crate) fn reset(&mut self) {
        *self = Self {
            generation: self.generation + 1,
            ..Self::default()
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_keep_arrival_order_and_finish_independently() {
        let mut log = CallLog::default();
        let first = log.arrive("Version", String::new());
        let second = log.arrive("Status", String::new());
        log.finish(second, tonic::Code::Ok, "");
        log.finish(first, tonic::Code::NotFound, "gone");
        let records = log.read(false);
        let seen: Vec<(u64, &str, i32, &str)> = records
            .iter()
            .map(|r| (r.seq, r.method.as_str(), r.code, r.message.as_str()))
            .collect();
        assert_eq!(seen, [(0, "Version", 5, "gone"), (1, "Status", 0, "")]);
    }

    #[test]
    fn clearing_keeps_counting_sequence_numbers() {
        let mut log = CallLog::default();
        log.arrive("Version", String::new());
        assert_eq!(log.read(true).len(), 1);
        log.arrive("Status", String::new());
        assert_eq!(log.read(false)[0].seq, 1);
    }

    #[test]
    fn an_answer_after_reset_does_not_touch_new_records() {
        let mut log = CallLog::default();
        let stale = log.arrive("Version", String::new());
        log.reset();
        let fresh = log.arrive("Status", String::new());
        assert_eq!(stale.seq, fresh.seq);
        log.finish(stale, tonic::Code::Internal, "late");
        assert_eq!(log.read(false)[0].message, IN_FLIGHT_MESSAGE);
    }

    #[test]
    fn the_oldest_records_make_room_at_the_cap() {
        let mut log = CallLog::default();
        for _ in 0..=MAX_RECORDS {
            log.arrive("Version", String::new());
        }
        let last = log.arrive("Status", String::new());
        log.finish(last, tonic::Code::Ok, "");
        let records = log.read(false);
        assert_eq!(records.len(), MAX_RECORDS);
        assert_eq!(records[0].seq, 2);
        assert_eq!(records[MAX_RECORDS - 1].code, 0);
    }
}
