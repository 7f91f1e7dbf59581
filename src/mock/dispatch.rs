//! The path every CRI call takes through the mock: logged on arrival, delayed and failed as
//! injected (before any state change), otherwise handled under the state lock, and its
//! answer's status written back into the call log.

use tonic::{Request, Response, Status};

use super::call_log::Ticket;
use super::error::RpcError;
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
        handle: impl FnOnce(&mut Inner, Req) -> Result<Resp, RpcError>,
    ) -> Result<Response<Resp>, Status>
    where
        Req: RequestSummary,
    {
        let request = request.into_inner();
        let summary = request.summary();
        let (ticket, delay, injected) = {
            let mut inner = self.lock();
            let ticket = inner.log.arrive(method, summary);
            let delay = inner.faults.take_delay(method);
            let injected = inner.faults.take_error(method);
            let Some(delay) = delay else {
                // The common case answers under the one lock it arrived with.
                return answer(&mut inner, ticket, injected, request, handle);
            };
            (ticket, delay, injected)
        };
        let pending = Pending {
            mock: self,
            ticket,
            answered: false,
        };
        tokio::time::sleep(delay).await;
        let mut inner = self.lock();
        let result = answer(&mut inner, ticket, injected, request, handle);
        drop(inner);
        pending.answered();
        result
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
        None => handle(inner, request).map_err(Status::from),
    };
    match &result {
        Ok(_) => inner.log.finish(ticket, tonic::Code::Ok, ""),
        Err(status) => inner.log.finish(ticket, status.code(), status.message()),
    }
    result.map(Response::new)
}

/// Marks a delayed call as cancelled in the log if its future is dropped (the client's
/// deadline passed or it hung up) before the mock answered.
struct Pending<'a> {
    mock: &'a MockRuntime,
    ticket: Ticket,
    answered: bool,
}

impl Pending<'_> {
    fn answered(mut self) {
        self.answered = true;
    }
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        if !self.answered {
            let ticket = self.ticket;
            self.mock
                .lock()
                .log
                .finish(ticket, tonic::Code::Cancelled, CANCELLED_MESSAGE);
        }
    }
}
