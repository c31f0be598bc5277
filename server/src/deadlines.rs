//! What one request may hold, in time: a request body that goes silent for
//! the idle timeout, or takes longer than its total time, is cut off with
//! 408 and the connection closed, and so is an upload that arrives slower
//! than its least rate once a grace period has passed (an upload
//! holds a spool file and a reading thread: they go to clients that send;
//! both figures are `RequestLimits`').
//! A request (other than an upload) that is not answered within the
//! request timeout gets 503. Dropping the handler releases what it held (a
//! spool file, a blocking thread, a connection).

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
pub(crate) const UPLOAD_PATH: &str = "/api/v1/publish";

/// An upload's least rate: by when its next byte must have arrived.
struct MinRate {
    started: Instant,
    grace: Duration,
    bytes_per_sec: u64,
    received: u64,
    timer: Pin<Box<Sleep>>,
}

impl MinRate {
    fn new(started: Instant, grace: Duration, bytes_per_sec: u64) -> Self {
        Self {
            started,
            grace,
            bytes_per_sec: bytes_per_sec.max(1),
            received: 0,
            timer: Box::pin(sleep_until(started + grace)),
        }
    }

    /// The grace, plus the time `received` bytes take at the least rate.
    fn due(&self) -> Instant {
        self.started
            + self.grace
            + Duration::from_secs_f64(self.received as f64 / self.bytes_per_sec as f64)
    }

    fn arrived(&mut self, bytes: usize) {
        self.received += bytes as u64;
        let due = self.due();
        self.timer.as_mut().reset(due);
    }
}

/// A request body that times out: after each chunk it waits at most
/// `idle` for the next, and the whole body must arrive by `deadline`.
struct TimedBody {
    inner: dev::Payload,
    idle: Duration,
    idle_timer: Pin<Box<Sleep>>,
    whole: Duration,
    deadline: Pin<Box<Sleep>>,
    /// Uploads only.
    min_rate: Option<MinRate>,
    /// Set when a timer fired, to what was passed, so the middleware
    /// answers 408 whatever the handler made of the error.
    fired: Rc<Cell<Option<Passed>>>,
    done: bool,
}

/// Which time limit a body passed.
#[derive(Debug, Clone, Copy)]
enum Passed {
    /// Sent nothing for this long.
    Idle(Duration),
    /// Was not whole within this.
    Whole(Duration),
    /// Slower than this many bytes a second.
    Rate(u64),
}

impl std::fmt::Display for Passed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Idle(limit) => write!(f, "sent nothing for {} s", limit.as_secs()),
            Self::Whole(limit) => write!(f, "did not arrive within {} s", limit.as_secs()),
            Self::Rate(bytes_per_sec) => {
                write!(f, "arrived slower than {bytes_per_sec} bytes a second")
            }
        }
    }
}

impl TimedBody {
    fn timed_out(&mut self, passed: Passed) -> Poll<Option<Result<Bytes, PayloadError>>> {
        self.done = true;
        self.fired.set(Some(passed));
        Poll::Ready(Some(Err(PayloadError::Io(io::Error::new(
            io::ErrorKind::TimedOut,
            passed.to_string(),
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
                if let Some(rate) = &mut this.min_rate {
                    rate.arrived(chunk.len());
                }
                Poll::Ready(Some(Ok(chunk)))
            }
            Poll::Ready(other) => {
                this.done = true;
                Poll::Ready(other)
            }
            Poll::Pending => {
                if this.deadline.as_mut().poll(cx).is_ready() {
                    let whole = this.whole;
                    return this.timed_out(Passed::Whole(whole));
                }
                if this.idle_timer.as_mut().poll(cx).is_ready() {
                    let idle = this.idle;
                    return this.timed_out(Passed::Idle(idle));
                }
                if let Some(rate) = &mut this.min_rate
                    && rate.timer.as_mut().poll(cx).is_ready()
                {
                    let bytes_per_sec = rate.bytes_per_sec;
                    return this.timed_out(Passed::Rate(bytes_per_sec));
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
            min_rate: is_upload.then(|| {
                MinRate::new(
                    now,
                    limits.upload_rate_grace,
                    limits.upload_min_bytes_per_sec,
                )
            }),
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
        (Ok(response), Some(passed)) => {
            let response = response?;
            let mut refusal = ApiError::RequestTimeout(passed.to_string()).error_response();
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
