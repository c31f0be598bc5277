//! `/problems/` and `/problems/{slug}`: the pages problem documents' `type`
//! URIs point at, one per [`ProblemType`], generated from that list.

use actix_web::{HttpResponse, web};
use agentlang_web::pages::{ProblemView, ProblemsPage};

use super::{CatalogError, html, session::MaybeSession};
use crate::{error::ProblemType, state::AppState};

fn view(p: ProblemType) -> ProblemView {
    ProblemView {
        slug: p.slug().to_owned(),
        status: p.status().as_u16(),
        title: p.title().to_owned(),
        advice: p.advice().to_owned(),
    }
}

/// `GET /problems/`.
pub async fn list_problems(
    state: web::Data<AppState>,
    session: MaybeSession,
) -> Result<HttpResponse, CatalogError> {
    html(&ProblemsPage {
        chrome: session.chrome(),
        registry_url: state.public_url().to_owned(),
        problem: None,
        problems: ProblemType::all().map(view).collect(),
    })
}

/// `GET /problems/{slug}`.
pub async fn show_problem(
    state: web::Data<AppState>,
    session: MaybeSession,
    slug: web::Path<String>,
) -> Result<HttpResponse, CatalogError> {
    let problem = ProblemType::from_slug(&slug).ok_or(CatalogError::NotFound)?;
    html(&ProblemsPage {
        chrome: session.chrome(),
        registry_url: state.public_url().to_owned(),
        problem: Some(view(problem)),
        problems: ProblemType::all()
            .filter(|p| *p != problem)
            .map(view)
            .collect(),
    })
}
