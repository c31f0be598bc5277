//! `agentlang 2fa` and the second factor on the command line
//! (docs/two-factor.md), against the real registry binary, with codes made
//! by pyotp (AGENTLANG_TEST_TOTP_PYTHON, which `.ci/run` installs).

use std::{path::PathBuf, process::Command, time::Duration};

use agentlang_e2e::{publisher, simple_tool, start_registry, write_tool};

const PASSWORD: &str = "correct horse battery staple\n";

fn totp_python() -> Option<PathBuf> {
    let found = std::env::var_os("AGENTLANG_TEST_TOTP_PYTHON").map(PathBuf::from);
    if found.is_none() {
        assert_ne!(
            std::env::var("CI").as_deref(),
            Ok("true"),
            "CI=true but AGENTLANG_TEST_TOTP_PYTHON is not set (.ci/run installs it)"
        );
        eprintln!("skipped: set AGENTLANG_TEST_TOTP_PYTHON to a Python with pyotp==2.12.1");
    }
    found
}

/// pyotp's codes for the previous, current and next time-step, taken early
/// in a step so each is accepted for 15 seconds at least, in this order.
fn codes(python: &PathBuf, secret: &str) -> [String; 3] {
    let into_step = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        % 30;
    if into_step > 15 {
        std::thread::sleep(Duration::from_secs(31 - into_step));
    }
    let out = Command::new(python)
        .arg("-c")
        .arg(
            "import pyotp, sys, time\n\
             totp = pyotp.TOTP(sys.argv[1])\n\
             step = int(time.time()) // 30\n\
             print(' '.join(totp.at((step + d) * 30) for d in (-1, 0, 1)))",
        )
        .arg(secret)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let codes: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    codes.try_into().expect("three codes")
}

#[test]
fn enable_then_login_and_owner_changes_take_a_code() {
    let Some(python) = totp_python() else {
        return;
    };
    let registry = start_registry();
    let alice = publisher(&registry, "alice");
    let _bob = publisher(&registry, "bob");
    write_tool(
        &alice.path("web_fetch"),
        &simple_tool("web_fetch", "1.0.0", &[]),
    );
    alice.ok(&["publish", "web_fetch"]);

    // Without a terminal, enable shows the secret and waits for `confirm`.
    let run = alice.run_with(
        &["--json", "2fa", "enable", "--password-stdin"],
        &[],
        PASSWORD,
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let enrolment = run.json();
    assert_eq!(enrolment["confirmed"], false, "{enrolment}");
    let secret = enrolment["secret"].as_str().unwrap().to_owned();
    assert!(
        enrolment["otpauth_uri"]
            .as_str()
            .unwrap()
            .starts_with("otpauth://totp/"),
        "{enrolment}"
    );
    let [previous, current, next] = codes(&python, &secret);
    let confirmed = alice.ok(&["--json", "2fa", "confirm", &previous]).json();
    let recovery = confirmed["recovery_codes"].as_array().unwrap().clone();
    assert_eq!(recovery.len(), 10, "{confirmed}");
    let status = alice.ok(&["--json", "2fa", "status"]).json();
    assert_eq!(status["enrolled"], true, "{status}");
    assert_eq!(status["recovery_codes_left"], 10, "{status}");

    // login: without a code (and no terminal to ask on) it fails saying how.
    let login = [
        "login",
        "--username",
        "alice",
        "--password-stdin",
        "--force",
    ];
    let refused = alice.run_with(&login, &[], PASSWORD).failure();
    assert!(refused.contains("--otp"), "{refused}");
    let mut with_code = login.to_vec();
    with_code.extend(["--otp", &current]);
    let run = alice.run_with(&with_code, &[], PASSWORD);
    assert_eq!(run.code, Some(0), "{}", run.stderr);

    // Owner changes take the code from AGENTLANG_OTP as from --otp.
    let refused = alice.fails(&["owner", "web_fetch", "--add", "bob"]);
    assert!(refused.contains("second factor"), "{refused}");
    let run = alice.run_with(
        &["owner", "web_fetch", "--add", "bob"],
        &[("AGENTLANG_OTP", &next)],
        "",
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);

    // Disabling takes a recovery code as well.
    let code = recovery[0].as_str().unwrap();
    alice.ok(&["2fa", "disable", "--otp", code]);
    let status = alice.ok(&["--json", "2fa", "status"]).json();
    assert_eq!(status["enrolled"], false, "{status}");
}
