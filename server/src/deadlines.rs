//! What one request may hold, in time: a request body that goes silent for
//! the idle timeout, or takes longer than its total time, is cut off with
//! 408 and the connection closed; a request (other than an upload) that is
//! not answered within the request timeout gets 503. Dropping the handler
//! releases what it held (a spool file, a blocking thread, a connection).

use std::{
    cell::Cell,
    io,
    pin::Pin,
    rc::Rc,
    task::{Context, Poll},
    time::Duration,
};

use actix_web::{
    HttpMessage, ResponseError,
    body::{EitherBody, MessageBody},
    dev::{self, ServiceRequest, ServiceResponse},
    error::{InternalError, PayloadError},
    http::{ConnectionType, Method},
    middleware::Next,
    web,
};
use bytes::Bytes;
use futures_util::Stream;
use tokio::time::{Instant, Sleep, sleep_until};

use crate::{error::ApiError, request_id::RequestId, state::AppState};
use app::ServiceError;

/// The one route whose body may take minutes (an upload of tens of MiB) and
/// whose work after the body has its own deadlines (database and storage
/// timeouts).
const UPLOAD_PATH: &str = "/api/v1/publish";

/// A request body that times out: after each chunk it waits at most
/// `idle` for the next, and the whole body must arrive by `deadline`.
struct TimedBody {
    inner: dev::Payload,
    idle: Duration,
    idle_timer: Pin<Box<Sleep>>,
    whole: Duration,
    deadline: Pin<Box<Sleep>>,
    /// Set when a timer fired, to the limit that was passed, so the
    /// middleware answers 408 whatever the handler made of the error.
    fired: Rc<Cell<Option<Duration>>>,
    done: bool,
}

impl TimedBody {
    fn timed_out(
        &mut self,
        limit: Duration,
        what: &str,
    ) -> Poll<Option<Result<Bytes, PayloadError>>> {
        self.done = true;
        self.fired.set(Some(limit));
        Poll::Ready(Some(Err(PayloadError::Io(io::Error::new(
            io::ErrorKind::TimedOut,
            format!("the request body {what} {} s", limit.as_secs()),
        )))))
    }
}

impl Stream for TimedBody {
    type Item = Result<Bytes, PayloadError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if this.done {
            return Poll::Ready(None);
        }
        match Pin::new(&mut this.inner).poll_next(cx) {
            Poll::Ready(Some(Ok(chunk))) => {
                let next = Instant::now() + this.idle;
                this.idle_timer.as_mut().reset(next);
                Poll::Ready(Some(Ok(chunk)))
            }
            Poll::Ready(other) => {
                this.done = true;
                Poll::Ready(other)
            }
            Poll::Pending => {
                if this.deadline.as_mut().poll(cx).is_ready() {
                    let whole = this.whole;
                    return this.timed_out(whole, "did not arrive within");
                }
                if this.idle_timer.as_mut().poll(cx).is_ready() {
                    let idle = this.idle;
                    return this.timed_out(idle, "sent nothing for");
                }
                Poll::Pending
            }
        }
    }
}

/// Whether the request may carry a body: HTTP/1.1 frames one only with
/// `Content-Length` (above 0) or `Transfer-Encoding`.
fn has_body(req: &ServiceRequest) -> bool {
    use actix_web::http::header;
    let headers = req.headers();
    headers.contains_key(header::TRANSFER_ENCODING)
        || headers
            .get(header::CONTENT_LENGTH)
            .is_some_and(|v| v.as_bytes() != b"0")
}

/// Middleware for every request: bounds the time its body and its answer
/// may take (see the module docs).
pub async fn bound_request(
    mut req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<EitherBody<impl MessageBody>>, actix_web::Error> {
    let Some(limits) = req
        .app_data::<web::Data<AppState>>()
        .map(|state| state.config.limits.clone())
    else {
        return Ok(next.call(req).await?.map_into_left_body());
    };
    let is_upload = req.method() == Method::POST && req.path() == UPLOAD_PATH;
    let whole = if is_upload {
        limits.upload_timeout
    } else {
        limits.request_timeout
    };
    let fired = Rc::new(Cell::new(None));
    // A request that announces no body (most GETs) has none to time.
    if has_body(&req) {
        let now = Instant::now();
        let body = TimedBody {
            inner: req.take_payload(),
            idle: limits.body_idle_timeout,
            idle_timer: Box::pin(sleep_until(now + limits.body_idle_timeout)),
            whole,
            deadline: Box::pin(sleep_until(now + whole)),
            fired: Rc::clone(&fired),
            done: false,
        };
        req.set_payload(dev::Payload::Stream {
            payload: Box::pin(body),
        });
    }

    // The request cannot be kept aside (routing needs the only handle to
    // it), so what a late answer needs of it is.
    let instance = req.path().to_owned();
    let request_id = req.extensions().get::<RequestId>().map(|id| id.0.clone());
    let answered = if is_upload {
        Ok(next.call(req).await)
    } else {
        tokio::time::timeout(limits.request_timeout, next.call(req)).await
    };
    match (answered, fired.get()) {
        (Ok(response), Some(limit)) => {
            let response = response?;
            let mut refusal = ApiError::RequestTimeout(limit.as_secs()).error_response();
            // The rest of the body is never read: the connection cannot
            // carry another request.
            refusal
                .head_mut()
                .set_connection_type(ConnectionType::Close);
            Ok(response.into_response(refusal).map_into_right_body())
        }
        (Ok(response), None) => Ok(response?.map_into_left_body()),
        (Err(_elapsed), _) => {
            let refusal = ApiError::from(ServiceError::Unavailable(format!(
                "the request was not answered within {} s",
                limits.request_timeout.as_secs()
            )));
            let response = refusal.complete_response(&instance, request_id.as_deref());
            // Without the request, only an error can carry the answer out.
            Err(InternalError::from_response(refusal, response).into())
        }
    }
}
