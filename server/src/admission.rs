//! What a request may hold while in flight: one of its address's share of
//! requests (429 past it), and, byte by byte as its body arrives, room in
//! its address's share of the process's body budget (429 past it) and in
//! the budget (503 past it), the connection closed either way. Both
//! are given back when the answer is ready. The rules are
//! `app::admission`'s; this is where HTTP meets them.
//!
//! Uploads stream to a spool file rather than memory and have slots of
//! their own (`app::uploads`), so their bodies are not counted; liveness,
//! readiness, metrics and static assets are never refused here, as rate
//! limits never refuse them.

use std::{
    cell::{Cell, RefCell},
    io,
    pin::Pin,
    rc::Rc,
    task::{Context, Poll},
};

use actix_web::{
    HttpMessage, ResponseError,
    body::{EitherBody, MessageBody},
    dev::{self, ServiceRequest, ServiceResponse},
    error::PayloadError,
    http::{ConnectionType, Method},
    middleware::Next,
    web,
};
use app::{
    ServiceError,
    admission::{Admitted, BodyRefusal},
    rate_limits::ClientAddr,
};
use bytes::Bytes;
use futures_util::Stream;

use crate::{deadlines::UPLOAD_PATH, error::ApiError, state::AppState};

/// Paths that answer monitors and browsers whatever else is going on.
fn is_exempt(path: &str) -> bool {
    matches!(path, "/healthz" | "/readyz" | "/metrics") || path.starts_with("/static/")
}

/// A request body counted against the budget as it arrives.
struct BudgetedBody {
    inner: dev::Payload,
    admitted: Rc<RefCell<Admitted>>,
    /// Set when the budget refused a chunk, so the middleware answers with
    /// the refusal whatever the handler made of the error.
    refused: Rc<Cell<Option<BodyRefusal>>>,
    done: bool,
}

impl Stream for BudgetedBody {
    type Item = Result<Bytes, PayloadError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if this.done {
            return Poll::Ready(None);
        }
        match Pin::new(&mut this.inner).poll_next(cx) {
            Poll::Ready(Some(Ok(chunk))) => match this.admitted.borrow_mut().hold(chunk.len()) {
                Ok(()) => Poll::Ready(Some(Ok(chunk))),
                Err(refusal) => {
                    this.done = true;
                    this.refused.set(Some(refusal));
                    Poll::Ready(Some(Err(PayloadError::Io(io::Error::other(
                        "the registry's budget for request bodies is spent",
                    )))))
                }
            },
            Poll::Ready(other) => {
                this.done = true;
                Poll::Ready(other)
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

/// Middleware for every request (after rate limits, which find the
/// client): see the module docs.
pub async fn admit_request(
    mut req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<EitherBody<impl MessageBody>>, actix_web::Error> {
    let Some(state) = req.app_data::<web::Data<AppState>>().cloned() else {
        return Ok(next.call(req).await?.map_into_left_body());
    };
    if is_exempt(req.path()) {
        return Ok(next.call(req).await?.map_into_left_body());
    }
    let client = req
        .extensions()
        .get::<ClientAddr>()
        .cloned()
        .unwrap_or_else(|| crate::rate_limit::client_addr(state.rate_limits(), req.request()));
    let admitted = match state.admission().admit(&client) {
        Ok(admitted) => Rc::new(RefCell::new(admitted)),
        Err(refusal) => {
            let response = ApiError::from(refusal).error_response();
            return Ok(req.into_response(response).map_into_right_body());
        }
    };
    let is_upload = req.method() == Method::POST && req.path() == UPLOAD_PATH;
    let refused = Rc::new(Cell::new(None));
    if !is_upload {
        let body = BudgetedBody {
            inner: req.take_payload(),
            admitted: Rc::clone(&admitted),
            refused: Rc::clone(&refused),
            done: false,
        };
        req.set_payload(dev::Payload::Stream {
            payload: Box::pin(body),
        });
    }
    let response = next.call(req).await?;
    // The handler is done with the body: what it held is given back when
    // `admitted` drops, here.
    drop(admitted);
    if let Some(refused) = refused.get() {
        let mut refusal = ApiError::from(ServiceError::from(refused)).error_response();
        // The rest of the body is never read: the connection cannot carry
        // another request.
        refusal
            .head_mut()
            .set_connection_type(ConnectionType::Close);
        return Ok(response.into_response(refusal).map_into_right_body());
    }
    Ok(response.map_into_left_body())
}
