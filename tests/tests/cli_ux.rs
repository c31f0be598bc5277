//! The command line's own manners: what it does when its reader goes away,
//! and the account, config and owner commands around the package ones.

use std::process::{Command, Stdio};

use agentlang_e2e::bins;

/// Runs `agentlang ARGS` with a standard output whose reader is already
/// closed, as `agentlang ... | head -1` leaves it once head has its line.
fn run_into_closed_pipe(args: &[&str]) -> (Option<i32>, String) {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    let config = tempfile::tempdir().expect("config folder");
    let out = Command::new(&bins().cli)
        .args(args)
        .env("AGENTLANG_CONFIG_DIR", config.path())
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .expect("running agentlang");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_closed_standard_output_ends_the_output_quietly() {
    for args in [
        &["completions", "bash"][..],
        &["events", "schema"],
        // What every command prints goes through the same writer.
        &["--json", "keygen"],
    ] {
        let (code, stderr) = run_into_closed_pipe(args);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert_eq!(code, Some(0), "{args:?}: {stderr}");
    }
}
