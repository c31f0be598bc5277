//! `/log/...`: the transparency log in the C2SP formats, so tools nobody
//! here wrote can check it: the checkpoint (a signed note), the log's
//! verifier key, hash tiles and entry bundles (tlog-tiles), and witness
//! cosignatures (tlog-cosignature).

use actix_web::{HttpRequest, HttpResponse, get, http::header, post, web};
use agentlang_core::tlog::{TILE_WIDTH, parse_tile_path};

use crate::{error::ApiError, routes::read_body, state::AppState};
use app::{ServiceError, tlog};

/// Largest note `POST /log/witness` reads: a checkpoint with a few dozen
/// signature lines.
const WITNESS_BODY_LIMIT: usize = 16 * 1024;

const NOTE: &str = "text/plain; charset=utf-8";

/// The latest checkpoint: a C2SP checkpoint (origin, tree size, base64 root
/// hash) as a signed note, signed by the log key (`GET /log/key`), with any
/// witnesses' cosignatures after the log's signature. Moves forward within
/// seconds of every change; never backwards.
#[utoipa::path(
    tag = "log",
    responses(
        (status = 200, description = "The checkpoint note", content_type = "text/plain; charset=utf-8", body = String,
            example = "registry.example/log\n42\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n\n— registry.example/log Az3grlgtzPICa5OS8npVmf1Myq/5IZniMp+ZJurmRDeOoRDe4URYN7u5/Zhcyv2q1gGzGku9nTo+zyWE+xeMcTOAYQ8=\n"),
        (status = 404, description = "No checkpoint yet", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[get("/log/checkpoint")]
pub async fn get_checkpoint(state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let checkpoint = tlog::checkpoint(&state)?;
    Ok(HttpResponse::Ok()
        .content_type(NOTE)
        .insert_header((header::CACHE_CONTROL, "no-cache"))
        .body(checkpoint.note.to_vec()))
}

/// The log's verifier key in the signed-note text form
/// `<name>+<key id hex>+<base64(0x01 || Ed25519 public key)>`. Pin it: a
/// checkpoint under another key is not this log's.
#[utoipa::path(
    tag = "log",
    responses((status = 200, description = "The verifier key and a newline", content_type = "text/plain; charset=utf-8", body = String))
)]
#[get("/log/key")]
pub async fn get_log_key(state: web::Data<AppState>) -> HttpResponse {
    HttpResponse::Ok()
        .content_type(NOTE)
        .insert_header((header::CACHE_CONTROL, "public, max-age=3600"))
        .body(format!("{}\n", tlog::verifier_key(&state)))
}

/// A tile (c2sp.org/tlog-tiles, height 8): `tile/<L>/<N>` holds hashes of
/// level `L`; `tile/entries/<N>` an entry bundle (each entry preceded by
/// its length, 2 bytes big-endian). `N` is written in groups of three
/// digits (`x001/x234/067`); `.p/<W>` names a partial tile of `W`.
/// Full tiles never change.
#[utoipa::path(
    tag = "log",
    params(("path" = String, Path, description = "`<L>/<N>[.p/<W>]` or `entries/<N>[.p/<W>]`", example = "0/x001/234.p/8")),
    responses(
        (status = 200, description = "The tile's bytes", content_type = "application/octet-stream", body = Vec<u8>),
        (status = 404, description = "No such tile in the served tree, or not a tile path", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[get("/log/tile/{path:.*}")]
pub async fn get_tile(
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let not_found = || ServiceError::NotFound(format!("tile {path}"));
    let tile = parse_tile_path(&path).ok_or_else(not_found)?;
    let bytes = tlog::tile(&state, &tile).await?.ok_or_else(not_found)?;
    let cache = if tile.width == TILE_WIDTH {
        "public, max-age=31536000, immutable"
    } else {
        "public, max-age=60"
    };
    Ok(HttpResponse::Ok()
        .content_type("application/octet-stream")
        .insert_header((header::CACHE_CONTROL, cache))
        .body(bytes))
}

/// A witness cosigns the served checkpoint: the body is the note
/// `GET /log/checkpoint` served with the witness's `cosignature/v1`
/// signature line added (c2sp.org/tlog-cosignature). Cosignatures by the
/// configured witnesses (`AGENTLANG_REGISTRY_TLOG_WITNESSES`) are kept and
/// served with that checkpoint from then on.
#[utoipa::path(
    tag = "log",
    request_body(content = String, content_type = "text/plain", description = "The cosigned checkpoint note"),
    responses(
        (status = 204, description = "Cosignatures taken"),
        (status = 403, description = "No signature by a configured witness", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 409, description = "Not the checkpoint served now", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 413, description = "The note is over 16 KiB", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 422, description = "A signature does not verify, or the note is not the registry's checkpoint", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[post("/log/witness")]
pub async fn post_cosignature(
    state: web::Data<AppState>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let body = read_body(&req, payload, WITNESS_BODY_LIMIT).await?;
    tlog::cosign(&state, &body).await?;
    Ok(HttpResponse::NoContent().finish())
}

/// A receipt for log entry `index`: a c2sp.org/tlog-proof@v1 at the served
/// checkpoint (with its witnesses' cosignatures). Its `extra` line is the
/// entry's bytes in base64, so a verifier holding the log key recomputes
/// the leaf hash and reads what the entry records, offline: `index`, the
/// inclusion proof lines, an empty line, then the checkpoint verbatim.
/// `agentlang install` keeps one beside every artifact it writes.
#[utoipa::path(
    tag = "log",
    params(("index" = u64, Path, description = "The entry's index in the log", example = 42)),
    responses(
        (status = 200, description = "The tlog-proof", content_type = "text/plain; charset=utf-8", body = String,
            example = "c2sp.org/tlog-proof@v1\nextra eyJ2IjoxfQ==\nindex 1\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n\nregistry.example/log\n2\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n\n— registry.example/log Az3grlgtzPICa5OS8npVmf1Myq/5IZniMp+ZJurmRDeOoRDe4URYN7u5/Zhcyv2q1gGzGku9nTo+zyWE+xeMcTOAYQ8=\n"),
        (status = 404, description = "No such entry in the served tree", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 503, description = "The log is not served: its stored entries failed the audit", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
#[get("/log/proof/{index}")]
pub async fn get_proof(
    state: web::Data<AppState>,
    index: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    // Parsed here, so `/log/proof/x` is a 404 like any entry not served.
    let index = index
        .parse::<u64>()
        .ok()
        .filter(|_| index.as_str() == "0" || !index.starts_with('0'))
        .ok_or_else(|| ServiceError::NotFound(format!("log entry {index}")))?;
    let proof = tlog::proof(&state, index).await?;
    Ok(HttpResponse::Ok()
        .content_type(NOTE)
        // The checkpoint moves on within seconds; a receipt at an older
        // one still verifies, so a short cache does no harm.
        .insert_header((header::CACHE_CONTROL, "public, max-age=10"))
        .body(proof))
}
