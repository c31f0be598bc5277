//! `owner`: a package's owners over the registry's owners API, as `cargo
//! owner` does it. Adding invites: the account becomes an owner when it
//! accepts (`owner NAME --accept`), so nobody is made an owner unasked.

use std::process::ExitCode;

use agentlang_core::{Kind, PackageName};
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::{args::OwnerArgs, env::Env, output::Output};

/// `GET /api/v1/{kind}/{name}/owners`, and what every change answers.
#[derive(Debug, Deserialize, Serialize)]
struct OwnerList {
    owners: Vec<Owner>,
    #[serde(default)]
    invitations: Vec<Invitation>,
}

#[derive(Debug, Deserialize, Serialize)]
struct Owner {
    username: String,
    role: String,
    added_at: String,
}

#[derive(Debug, Deserialize, Serialize)]
struct Invitation {
    username: String,
    #[serde(default)]
    invited_by: Option<String>,
    expires_at: String,
}

pub fn run(env: &Env, args: &OwnerArgs) -> Result<ExitCode> {
    let name = PackageName::new(args.name.as_str())
        .with_context(|| format!("{:?} is not a package name", args.name))?;
    let kind_given = args.kind.map(crate::args::KindArg::kind);
    if args.list {
        let client = env.anonymous()?;
        let kind = crate::index::which_kind(&client, &name, kind_given)?;
        let list: OwnerList = client.send_json(client.get(&owners_path(kind, &name)))?;
        env.out.emit(&list, || render(&env.out, kind, &name, &list));
        return Ok(ExitCode::SUCCESS);
    }
    let client = env.authenticated()?;
    let kind = crate::index::which_kind(&client, &name, kind_given)?;
    let invitation = format!("/api/v1/invitations/{}/{name}", kind.plural());
    if args.accept {
        let list: OwnerList = client.send_json(client.put(&invitation))?;
        env.out.emit(&list, || {
            format!("{} you now own {kind} {name}", env.out.green("✓"))
        });
    } else if args.decline {
        client.send(client.delete(&invitation))?;
        env.out.emit(&json!({ "declined": true }), || {
            format!(
                "{} declined the invitation to own {kind} {name}",
                env.out.green("✓")
            )
        });
    } else if !args.add.is_empty() {
        let body = json!({ "usernames": args.add });
        let list: OwnerList = crate::two_factor::send_json(env, &client, || {
            client.put(&owners_path(kind, &name)).json(&body)
        })?;
        env.out.emit(&list, || {
            format!(
                "{} invited {} to own {kind} {name}; each becomes an owner on accepting (`agentlang owner {name} --accept`)",
                env.out.green("✓"),
                args.add.join(", ")
            )
        });
    } else {
        let body = json!({ "usernames": args.remove });
        let list: OwnerList = crate::two_factor::send_json(env, &client, || {
            client.delete(&owners_path(kind, &name)).json(&body)
        })?;
        env.out.emit(&list, || {
            format!(
                "{} removed {} from the owners of {kind} {name}",
                env.out.green("✓"),
                args.remove.join(", ")
            )
        });
    }
    Ok(ExitCode::SUCCESS)
}

fn owners_path(kind: Kind, name: &PackageName) -> String {
    format!("/api/v1/{}/{name}/owners", kind.plural())
}

fn render(out: &Output, kind: Kind, name: &PackageName, list: &OwnerList) -> String {
    let mut lines = vec![format!("owners of {kind} {name}:")];
    let width = list
        .owners
        .iter()
        .map(|o| o.username.len())
        .max()
        .unwrap_or(0);
    for o in &list.owners {
        lines.push(format!(
            "  {}  {:7}  since {}",
            out.bold(&format!("{:width$}", o.username)),
            o.role,
            o.added_at
        ));
    }
    for i in &list.invitations {
        let by = i
            .invited_by
            .as_deref()
            .map(|b| format!(" by {b}"))
            .unwrap_or_default();
        lines.push(format!(
            "  {} (invited{by}, until {})",
            i.username, i.expires_at
        ));
    }
    lines.join("\n")
}
