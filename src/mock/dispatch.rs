//! The path every CRI call takes through the mock: logged on arrival, delayed and failed as
//! injected (matched on the method and the id the request names, before any state change),
//! otherwise handled under the state lock, and its answer's status written back into the log.
//! A delayed call takes effect when its delay ends; a StartContainer holds its container in
//! the starting transition until then.

use std::time::Duration;

use tonic::{Request, Response, Status};

use super::call_log::Ticket;
use super::error::RpcError;
use super::faults::FaultTarget;
use super::transitions::Begun;
use super::{Inner, MockRuntime};
use crate::cri::RequestSummary;

/// Message logged for a call whose client gave up while it was delayed.
const CANCELLED_MESSAGE: &str = "the client went away before the mock answered";

impl MockRuntime {
    /// Runs one CRI call of `method` through the log and injected faults into `handle`.
    pub(crate) async fn dispatch<Req, Resp>(
        &self,
        method: &'static str,
        request: Request<Req>,
        handle: impl FnOnce(&mut Inner, Req) -> Result<Resp, RpcError> + Send + 'static,
    ) -> Result<Response<Resp>, Status>
    where
        Req: RequestSummary + FaultTarget + Send + 'static,
        Resp: Send + 'static,
    {
        self.dispatch_timed(method, request, |_, _| Ok(None), handle)
            .await
    }

    /// [`MockRuntime::dispatch`] for a call that takes time of its own (a pull fetching
    /// layers, a removal): `arrive` runs under the lock the call arrives with, after the
    /// injected faults are taken, and answers how long the work takes (added to any injected
    /// delay), or an error the call answers at once.
    ///
    /// A delayed call takes effect when its delay ends, not on arrival: a sandbox, container
    /// or image it makes appears then. Meanwhile its object may be in a transition (see
    /// [`super::transitions`]). A call injected with `finish_if_abandoned` runs on in a task
    /// of its own, so it takes effect even if its client leaves before the answer.
    pub(crate) async fn dispatch_timed<Req, Resp>(
        &self,
        method: &'static str,
        request: Request<Req>,
        arrive: impl FnOnce(&mut Inner, &Req) -> Result<Option<Duration>, RpcError>,
        handle: impl FnOnce(&mut Inner, Req) -> Result<Resp, RpcError> + Send + 'static,
    ) -> Result<Response<Resp>, Status>
    where
        Req: RequestSummary + FaultTarget + Send + 'static,
        Resp: Send + 'static,
    {
        let request = request.into_inner();
        let summary = request.summary();
        let (held, delay, injected, finish) = {
            let mut guard = self.lock();
            let inner = &mut *guard;
            let ticket = inner.log.arrive(method, summary);
            // Faults are taken on arrival, in arrival order, but a targeted one can only be
            // taken by a call naming its target, so concurrent calls cannot race for it.
            let target = request.fault_target();
            let latency = inner.faults.take_latency(method, target);
            let injected = inner.faults.take_error(method, target);
            let modelled = match injected {
                Some(_) => None,
                None => match arrive(inner, &request) {
                    Ok(modelled) => modelled,
                    Err(err) => {
                        let refused = Some(Status::from(err));
                        return answer(inner, ticket, refused, request, handle);
                    }
                },
            };
            let delay = match (latency.map(|l| l.delay), modelled) {
                (Some(a), Some(b)) => Some(a + b),
                (a, b) => a.or(b),
            };
            let Some(delay) = delay else {
                // The common case answers under the one lock it arrived with.
                return answer(inner, ticket, injected, request, handle);
            };
            // A call that will answer an injected error does nothing, so starts nothing.
            let begun = match injected {
                Some(_) => None,
                None => inner.transitions.begin(&inner.state, method, target),
            };
            let held = Held {
                mock: self.clone(),
                ticket,
                begun,
                answered: false,
            };
            let finish = latency.is_some_and(|l| l.finish_if_abandoned);
            (held, delay, injected, finish)
        };
        if finish {
            let (sender, receiver) = tokio::sync::oneshot::channel();
            tokio::spawn(async move {
                tokio::time::sleep(delay).await;
                let _ = sender.send(held.answer(injected, request, handle));
            });
            return receiver.await.unwrap_or_else(|_| {
                Err(Status::internal(
                    "the mock's held call ended without an answer",
                ))
            });
        }
        tokio::time::sleep(delay).await;
        held.answer(injected, request, handle)
    }
}

/// Answers a call (the injected error, else `handle`'s) and logs the outcome.
fn answer<Req, Resp>(
    inner: &mut Inner,
    ticket: Ticket,
    injected: Option<Status>,
    request: Req,
    handle: impl FnOnce(&mut Inner, Req) -> Result<Resp, RpcError>,
) -> Result<Response<Resp>, Status> {
    let result = match injected {
        Some(status) => Err(status),
        None => {
            inner.settle_exits();
            handle(inner, request).map_err(Status::from)
        }
    };
    match &result {
        Ok(_) => inner.log.finish(ticket, tonic::Code::Ok, ""),
        Err(status) => inner.log.finish(ticket, status.code(), status.message()),
    }
    result.map(Response::new)
}

/// A delayed call between its arrival and its answer. Dropped unanswered (its client's
/// deadline passed or it hung up, and it was not held to the end), it is logged as cancelled
/// and its object leaves the transition it began.
struct Held {
    mock: MockRuntime,
    ticket: Ticket,
    begun: Option<Begun>,
    answered: bool,
}

impl Held {
    /// Ends the transition and answers, under one lock.
    fn answer<Req, Resp>(
        mut self,
        injected: Option<Status>,
        request: Req,
        handle: impl FnOnce(&mut Inner, Req) -> Result<Resp, RpcError>,
    ) -> Result<Response<Resp>, Status> {
        let mut inner = self.mock.lock();
        if let Some(begun) = self.begun.take() {
            inner.transitions.end(&begun);
        }
        let result = answer(&mut inner, self.ticket, injected, request, handle);
        drop(inner);
        self.answered = true;
        result
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if !self.answered {
            let mut inner = self.mock.lock();
            if let Some(begun) = self.begun.take() {
                inner.transitions.end(&begun);
            }
            inner
                .log
                .finish(self.ticket, tonic::Code::Cancelled, CANCELLED_MESSAGE);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cri::v1;
    use crate::mock::faults::Aim;

    #[tokio::test]
    async fn a_delayed_call_shows_in_flight_then_cancelled_when_its_client_leaves() {
        let mock = MockRuntime::new();
        let hour = Duration::from_secs(3600);
        mock.lock()
            .faults
            .inject_latency("Version", Aim::default(), hour, 1);
        let request = Request::new(v1::VersionRequest::default());
        let mut call =
            Box::pin(mock.dispatch("Version", request, |inner, _| Ok(inner.version.clone())));
        assert!(futures::poll!(call.as_mut()).is_pending());
        let in_flight = mock.lock().log.read(false)[0].code;
        drop(call);
        let record = mock.lock().log.read(false).remove(0);
        assert_eq!(in_flight, tonic::Code::Unknown as i32);
        assert_eq!(
            (record.code, record.message.as_str()),
            (tonic::Code::Cancelled as i32, CANCELLED_MESSAGE)
        );
    }

    #[tokio::test]
    async fn an_injected_error_skips_the_handler() {
        let mock = MockRuntime::new();
        let status = tonic::Code::NotFound;
        mock.lock()
            .faults
            .inject_error("Version", Aim::default(), status, "gone".into(), 1);
        let handled = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = handled.clone();
        let request = Request::new(v1::VersionRequest::default());
        let answer = mock
            .dispatch("Version", request, move |inner, _| {
                flag.store(true, std::sync::atomic::Ordering::SeqCst);
                Ok(inner.version.clone())
            })
            .await;
        assert_eq!(answer.map_err(|s| s.code()).err(), Some(status));
        assert!(!handled.load(std::sync::atomic::Ordering::SeqCst));
    }
}
