//! Request ids: the client's `x-request-id` when it is sane, else a fresh
//! UUIDv7; kept in the request's extensions, recorded on the request's log
//! span, echoed in the response and in problem documents.

use actix_web::{
    HttpMessage,
    body::MessageBody,
    dev::{ServiceRequest, ServiceResponse},
    http::header::{HeaderName, HeaderValue},
    middleware::Next,
};
use tracing::Span;
use tracing_actix_web::RootSpanBuilder;

pub const REQUEST_ID_HEADER: HeaderName = HeaderName::from_static("x-request-id");

/// Load balancers' and orchestrators' probes.
const HEALTH_PATHS: [&str; 2] = ["/healthz", "/readyz"];

/// Longest client-chosen request id we keep; longer ones are replaced.
const MAX_CLIENT_ID_LEN: usize = 128;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestId(pub String);

impl RequestId {
    fn from_request(req: &ServiceRequest) -> Self {
        let client = req
            .headers()
            .get(&REQUEST_ID_HEADER)
            .and_then(|v| v.to_str().ok())
            .filter(|v| {
                !v.is_empty()
                    && v.len() <= MAX_CLIENT_ID_LEN
                    && v.bytes().all(|b| b.is_ascii_graphic())
            });
        Self(client.map_or_else(|| uuid::Uuid::now_v7().to_string(), str::to_owned))
    }
}

/// Middleware: assigns the id before anything else runs, echoes it after.
pub async fn assign_request_id(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let id = RequestId::from_request(&req);
    let header = HeaderValue::from_str(&id.0).ok();
    req.extensions_mut().insert(id);
    let mut response = next.call(req).await?;
    if let Some(value) = header {
        response.headers_mut().insert(REQUEST_ID_HEADER, value);
    }
    Ok(response)
}

/// The request's log span. Built here rather than with tracing-actix-web's
/// `root_span!`, which adds an id of its own: a request has exactly one id,
/// the one the client sees in `x-request-id`.
pub struct RequestSpan;

impl RootSpanBuilder for RequestSpan {
    fn on_request_start(request: &ServiceRequest) -> Span {
        // With the log above `info` no span is recorded: skip its fields.
        if !tracing::enabled!(tracing::Level::INFO) {
            return Span::none();
        }
        let id = request
            .extensions()
            .get::<RequestId>()
            .map(|id| id.0.clone())
            .unwrap_or_default();
        let client = request
            .peer_addr()
            .map(|a| a.ip().to_string())
            .unwrap_or_default();
        // Probes answer every few seconds: their lines are DEBUG, so a
        // log at `info` shows what clients do.
        if HEALTH_PATHS.contains(&request.path()) {
            return tracing::debug_span!(
                "request",
                request_id = %id,
                http.method = %request.method(),
                http.route = tracing::field::Empty,
                http.target = %request.uri(),
                http.client_ip = %client,
                http.status_code = tracing::field::Empty,
                otel.status_code = tracing::field::Empty,
                exception.message = tracing::field::Empty,
            );
        }
        tracing::info_span!(
            "request",
            request_id = %id,
            http.method = %request.method(),
            // Recorded by `metrics::record_requests`, which finds the
            // route pattern once for both (a walk of every route).
            http.route = tracing::field::Empty,
            http.target = %request.uri(),
            http.client_ip = %client,
            // Filled in by `on_request_end`.
            http.status_code = tracing::field::Empty,
            otel.status_code = tracing::field::Empty,
            exception.message = tracing::field::Empty,
        )
    }

    /// The status, and for an error what the client was told (its
    /// `Display`, never a `Debug` dump): one line per request. A 5xx's
    /// cause chain is logged once, at ERROR, where it is answered
    /// (`error.rs`).
    fn on_request_end<B: MessageBody>(
        span: Span,
        outcome: &Result<ServiceResponse<B>, actix_web::Error>,
    ) {
        let (status, error) = match outcome {
            Ok(response) => (response.status(), response.response().error()),
            Err(error) => (error.as_response_error().status_code(), Some(error)),
        };
        span.record("http.status_code", i64::from(status.as_u16()));
        span.record(
            "otel.status_code",
            if status.is_server_error() {
                "ERROR"
            } else {
                "OK"
            },
        );
        if let Some(error) = error.filter(|_| status.is_client_error()) {
            span.record("exception.message", tracing::field::display(error));
        }
    }
}
