//! `HEAD` wherever `GET` works. Routes are declared for `GET`; a `HEAD`
//! request is routed as its `GET`, marked so handlers can skip work a
//! body would need (a download opens no blob stream and counts nothing),
//! and the HTTP layer sends the same status and headers without the body:
//! actix-http's encoder knows the request was `HEAD` from its own parse.

use std::{
    pin::Pin,
    task::{Context, Poll},
};

use actix_web::{
    Error, HttpMessage, HttpRequest,
    body::{BodySize, MessageBody},
    dev::{ServiceRequest, ServiceResponse},
    http::Method,
    middleware::Next,
    web::Bytes,
};

/// In a request's extensions: the client asked `HEAD`.
#[derive(Debug, Clone, Copy)]
struct AskedHead;

/// Middleware: routes `HEAD` as `GET`.
pub async fn route_head_as_get(
    mut req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, Error> {
    if req.method() == Method::HEAD {
        req.extensions_mut().insert(AskedHead);
        req.head_mut().method = Method::GET;
    }
    next.call(req).await
}

/// Whether the client asked `HEAD` (the request now reads as `GET`).
pub fn asked_head(req: &HttpRequest) -> bool {
    req.extensions().contains::<AskedHead>()
}

/// The body of an answer to `HEAD` whose `GET` would send `len` bytes: its
/// size sets `Content-Length`, and it has nothing to send (the encoder
/// sends no body to a `HEAD` anyway).
#[derive(Debug, Clone, Copy)]
pub struct HeadBody(pub u64);

impl MessageBody for HeadBody {
    type Error = std::convert::Infallible;

    fn size(&self) -> BodySize {
        BodySize::Sized(self.0)
    }

    fn poll_next(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Bytes, Self::Error>>> {
        Poll::Ready(None)
    }
}
