//! The metrics middleware: every request counted and timed under its route
//! pattern in the registry's [`Metrics`].

use std::time::Instant;

use actix_web::{
    body::MessageBody,
    dev::{ServiceRequest, ServiceResponse},
    middleware::Next,
    web,
};
use app::metrics::Metrics;

/// Middleware: counts and times every request under its route pattern
/// (`/api/v1/models/{name}`, not the concrete path, so the label set stays
/// bounded); unmatched paths share one label.
pub async fn record_requests(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let started = Instant::now();
    // Its own app data (not the state's): this module sits below the state.
    let metrics = req.app_data::<web::Data<Metrics>>().cloned();
    let method = req.method().as_str().to_owned();
    let response = next.call(req).await?;
    if let Some(metrics) = metrics {
        let route = response
            .request()
            .match_pattern()
            .unwrap_or_else(|| "unmatched".to_owned());
        // The request's log span (tracing-actix-web's, current here).
        tracing::Span::current().record("http.route", route.as_str());
        metrics.observe_request(
            &method,
            &route,
            response.status().as_u16(),
            started.elapsed().as_secs_f64(),
        );
    }
    Ok(response)
}
