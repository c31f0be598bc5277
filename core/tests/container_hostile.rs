//! Hand-made hostile archives: each refusal [`container::read`] promises,
//! asserted by its own error variant.

mod container_support;

use std::{io::Write, time::Instant};

use agentlang_core::{
    Kind,
    container::{self, ContainerError, Limits, ManifestError},
    crypt::CryptError,
    tree::PathError,
};
use container_support::*;
use flate2::{Compression, write::GzEncoder};

fn read(bytes: &[u8]) -> Result<container::Container, ContainerError> {
    container::read(bytes, &Limits::default())
}

fn read_with(bytes: &[u8], limits: Limits) -> Result<container::Container, ContainerError> {
    container::read(bytes, &limits)
}

fn err(bytes: &[u8]) -> ContainerError {
    read(bytes).expect_err("the container must be refused")
}

/// The sample container's members, re-packed by `edit` with the original
/// manifest and signature.
fn repacked(edit: impl FnOnce(&mut Vec<(String, Vec<u8>)>)) -> Vec<u8> {
    let mut members = members_of(&sample_container());
    edit(&mut members);
    let mut tar = RawTar::new();
    for (p, b) in &members {
        tar.file(p, b);
    }
    gzip(&tar.finish())
}

/// The sample's members plus extra raw tar bytes before the end marker.
fn with_extra(extra: impl FnOnce(&mut RawTar)) -> Vec<u8> {
    let mut tar = RawTar::new();
    for (p, b) in members_of(&sample_container()) {
        tar.file(&p, &b);
    }
    extra(&mut tar);
    gzip(&tar.finish())
}

const AGENT: &[u8] = AGENT_YAML.as_bytes();

#[test]
fn the_fixtures_themselves_are_accepted() {
    read(&sample_container()).unwrap();
    read(&repacked(|_| {})).unwrap();
    read(&with_extra(|_| {})).unwrap();
    read(&signed_container(Kind::Agent, &[("agent.yaml", AGENT)])).unwrap();
}

#[test]
fn parent_dir_path() {
    let bytes = with_extra(|t| {
        t.file("context/../../etc/passwd", b"x");
    });
    assert_eq!(
        err(&bytes),
        ContainerError::ParentDirPath("context/../../etc/passwd".into())
    );
}

#[test]
fn absolute_path() {
    let bytes = with_extra(|t| {
        t.file("/etc/passwd", b"x");
    });
    assert_eq!(
        err(&bytes),
        ContainerError::AbsolutePath("/etc/passwd".into())
    );
}

#[test]
fn non_utf8_path() {
    let bytes = with_extra(|t| {
        let header = RawTar::header(b"context/\xff\xfe.md", tar::EntryType::Regular, 1);
        t.entry(&header, b"x");
    });
    assert!(matches!(err(&bytes), ContainerError::NonUtf8Path(p) if p.starts_with("context/")));
}

#[test]
fn other_invalid_paths() {
    let bytes = with_extra(|t| {
        t.file("./agent.yaml", b"x");
    });
    assert!(matches!(
        err(&bytes),
        ContainerError::InvalidPath {
            source: PathError::EmptyComponent(_),
            ..
        }
    ));
}

#[test]
fn symlink() {
    let bytes = with_extra(|t| {
        let mut header = RawTar::header(b"context/link", tar::EntryType::Symlink, 0);
        header.set_link_name("/etc/passwd").unwrap();
        header.set_cksum();
        t.entry(&header, &[]);
    });
    assert_eq!(err(&bytes), ContainerError::Symlink("context/link".into()));
}

#[test]
fn hardlink() {
    let bytes = with_extra(|t| {
        let mut header = RawTar::header(b"context/hard", tar::EntryType::Link, 0);
        header.set_link_name("agent.yaml").unwrap();
        header.set_cksum();
        t.entry(&header, &[]);
    });
    assert_eq!(err(&bytes), ContainerError::Hardlink("context/hard".into()));
}

#[test]
fn directories_and_devices_are_not_regular_files() {
    for (entry_type, name) in [
        (tar::EntryType::Directory, "directory"),
        (tar::EntryType::Char, "character device"),
        (tar::EntryType::Block, "block device"),
        (tar::EntryType::Fifo, "FIFO"),
    ] {
        let bytes = with_extra(|t| {
            t.typed("context/thing", entry_type);
        });
        assert_eq!(
            err(&bytes),
            ContainerError::NotRegularFile {
                path: "context/thing".into(),
                entry_type: name.into(),
            }
        );
    }
    let bytes = with_extra(|t| {
        t.typed("context/dir/", tar::EntryType::Directory);
    });
    assert!(matches!(
        err(&bytes),
        ContainerError::NotRegularFile { entry_type, .. } if entry_type == "directory"
    ));
}

#[test]
fn gnu_long_names_are_refused() {
    let bytes = with_extra(|t| {
        let header = RawTar::header(b"././@LongLink", tar::EntryType::GNULongName, 4);
        t.entry(&header, b"abc\0");
        t.file("x", b"x");
    });
    assert!(matches!(
        err(&bytes),
        ContainerError::NotRegularFile { entry_type, .. } if entry_type.contains("GNU long-name")
    ));
}

#[test]
fn duplicate_member() {
    let bytes = with_extra(|t| {
        t.file("agent.yaml", AGENT);
    });
    assert_eq!(
        err(&bytes),
        ContainerError::DuplicateMember("agent.yaml".into())
    );
}

#[test]
fn case_colliding_members() {
    let bytes = with_extra(|t| {
        t.file("Agent.yaml", AGENT);
    });
    assert_eq!(
        err(&bytes),
        ContainerError::CaseCollision {
            path: "Agent.yaml".into(),
            other: "agent.yaml".into(),
        }
    );
}

#[test]
fn member_not_listed_in_manifest() {
    let bytes = with_extra(|t| {
        t.file("context/smuggled.md", b"hello");
    });
    assert_eq!(
        err(&bytes),
        ContainerError::UnlistedMember("context/smuggled.md".into())
    );
}

#[test]
fn member_missing_from_container() {
    let bytes = repacked(|m| m.retain(|(p, _)| p != "context/templates/report.md"));
    assert_eq!(
        err(&bytes),
        ContainerError::MissingMember("context/templates/report.md".into())
    );
}

#[test]
fn size_mismatch() {
    let bytes = repacked(|m| {
        for (p, b) in m.iter_mut() {
            if p == "context/templates/report.md" {
                b.extend_from_slice(b"more");
            }
        }
    });
    assert_eq!(
        err(&bytes),
        ContainerError::SizeMismatch {
            path: "context/templates/report.md".into(),
            listed: 9,
            actual: 13,
        }
    );
}

#[test]
fn hash_mismatch() {
    let bytes = repacked(|m| {
        for (p, b) in m.iter_mut() {
            if p == "context/templates/report.md" {
                b[2] ^= 1;
            }
        }
    });
    assert_eq!(
        err(&bytes),
        ContainerError::HashMismatch("context/templates/report.md".into())
    );
}

#[test]
fn pax_size_disagreeing_with_header_size() {
    let bytes = with_extra(|t| {
        t.pax(&[("size", b"2")]);
        t.file("context/pax.md", b"x");
    });
    assert_eq!(
        err(&bytes),
        ContainerError::PaxSizeMismatch {
            path: "context/pax.md".into(),
            header: 1,
            pax: 2,
        }
    );
}

#[test]
fn pax_path_is_checked_like_any_path() {
    let bytes = with_extra(|t| {
        t.pax(&[("path", b"../escape")]);
        t.file("context/innocent.md", b"x");
    });
    assert_eq!(
        err(&bytes),
        ContainerError::ParentDirPath("../escape".into())
    );
}

#[test]
fn pax_header_abuse() {
    let bytes = with_extra(|t| {
        t.pax(&[("comment", b"a")]);
        t.pax(&[("comment", b"b")]);
        t.file("context/x.md", b"x");
    });
    assert!(matches!(err(&bytes), ContainerError::PaxHeader(m) if m.contains("two PAX")));

    let bytes = with_extra(|t| {
        let header = RawTar::header(b"GlobalHead", tar::EntryType::XGlobalHeader, 0);
        t.entry(&header, &[]);
    });
    assert!(matches!(err(&bytes), ContainerError::PaxHeader(m) if m.contains("global")));

    let bytes = with_extra(|t| {
        t.pax(&[("comment", &vec![b'a'; 70_000])]);
        t.file("context/x.md", b"x");
    });
    assert!(matches!(err(&bytes), ContainerError::PaxHeader(m) if m.contains("at most")));

    let bytes = with_extra(|t| {
        t.pax(&[("linkpath", b"/etc/passwd")]);
        t.file("context/x.md", b"x");
    });
    assert!(matches!(err(&bytes), ContainerError::PaxHeader(m) if m.contains("linkpath")));

    let bytes = with_extra(|t| {
        t.pax(&[("comment", b"dangling")]);
    });
    assert!(matches!(err(&bytes), ContainerError::PaxHeader(m) if m.contains("no member")));
}

#[test]
fn too_many_entries() {
    let limits = Limits {
        max_entries: 5,
        ..Limits::default()
    };
    assert_eq!(
        read_with(&sample_container(), limits).unwrap_err(),
        ContainerError::TooManyEntries { limit: 5 }
    );
}

#[test]
fn too_many_uncompressed_bytes() {
    let limits = Limits {
        max_uncompressed_bytes: 4096,
        ..Limits::default()
    };
    assert_eq!(
        read_with(&sample_container(), limits).unwrap_err(),
        ContainerError::UncompressedTooLarge { limit: 4096 }
    );
}

#[test]
fn too_many_compressed_bytes() {
    let limits = Limits {
        max_compressed_bytes: 100,
        ..Limits::default()
    };
    assert_eq!(
        read_with(&sample_container(), limits).unwrap_err(),
        ContainerError::CompressedTooLarge { limit: 100 }
    );
}

/// A gzip stream that inflates `zeros` bytes of tar member data.
fn gzip_bomb(zeros: u64) -> Vec<u8> {
    let mut gz = GzEncoder::new(Vec::new(), Compression::fast());
    let header = RawTar::header(b"context/bomb", tar::EntryType::Regular, zeros);
    gz.write_all(header.as_bytes()).unwrap();
    let chunk = vec![0u8; 1 << 20];
    let mut left = zeros;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        gz.write_all(&chunk[..n]).unwrap();
        left -= n as u64;
    }
    gz.finish().unwrap()
}

#[test]
fn gzip_bomb_is_refused_early() {
    let bomb = gzip_bomb(64 << 20);
    assert!(bomb.len() < 1 << 20, "the bomb compresses over 64:1");
    let started = Instant::now();
    assert_eq!(
        err(&bomb),
        ContainerError::RatioTooHigh {
            limit: Limits::default().max_ratio
        }
    );
    // Bounded time: the refusal comes after about ratio_grace_bytes of
    // output, not after inflating 64 MiB (a generous bound for debug builds).
    let elapsed = started.elapsed();
    eprintln!("gzip bomb refused in {elapsed:?}");
    assert!(elapsed.as_secs() < 5);
}

#[test]
fn not_gzip() {
    let plain_tar = RawTar::new().file("agent.yaml", AGENT).finish();
    assert_eq!(err(&plain_tar), ContainerError::NotGzip);
    assert_eq!(err(b""), ContainerError::NotGzip);
    assert_eq!(err(b"\x1f"), ContainerError::NotGzip);
    assert_eq!(err(b"PK\x03\x04 a zip"), ContainerError::NotGzip);
}

#[test]
fn truncated_gzip() {
    let bytes = sample_container();
    for cut in [bytes.len() / 2, bytes.len() - 4, 12] {
        assert_eq!(
            err(&bytes[..cut]),
            ContainerError::TruncatedGzip,
            "cut at {cut}"
        );
    }
}

#[test]
fn corrupt_gzip() {
    let mut bytes = sample_container();
    let crc_at = bytes.len() - 8;
    bytes[crc_at] ^= 0xff;
    assert!(matches!(err(&bytes), ContainerError::Gzip(m) if m.contains("checksum")));
}

#[test]
fn truncated_tar() {
    let mut tar = RawTar::new();
    for (p, b) in members_of(&sample_container()) {
        tar.file(&p, &b);
    }
    let whole = tar.finish();
    // Inside a member's data, inside a header, and without the end marker.
    for cut in [700, 1100, whole.len() - 1024, whole.len() - 512] {
        assert_eq!(
            err(&gzip(&whole[..cut])),
            ContainerError::TruncatedTar,
            "cut at {cut}"
        );
    }
}

#[test]
fn trailing_garbage_after_gzip() {
    let mut bytes = sample_container();
    bytes.extend_from_slice(b"garbage");
    assert_eq!(err(&bytes), ContainerError::TrailingGarbage);
    // A second gzip member is trailing data too.
    let mut bytes = sample_container();
    bytes.extend_from_slice(&gzip(b"more"));
    assert_eq!(err(&bytes), ContainerError::TrailingGarbage);
}

#[test]
fn data_after_tar_end() {
    let mut tar = RawTar::new();
    for (p, b) in members_of(&sample_container()) {
        tar.file(&p, &b);
    }
    let mut bytes = tar.finish();
    bytes.extend_from_slice(&RawTar::new().file("context/hidden.md", b"x").finish());
    assert_eq!(err(&gzip(&bytes)), ContainerError::DataAfterTarEnd);
    // Zero padding after the marker (as GNU tar writes) is fine.
    let mut padded = tar.finish();
    padded.extend_from_slice(&[0; 8192]);
    read(&gzip(&padded)).unwrap();
}

#[test]
fn malformed_tar_header() {
    let mut tar = RawTar::new();
    tar.file("agent.yaml", AGENT);
    let mut bytes = tar.finish();
    bytes[148] ^= 1; // checksum field
    assert!(matches!(err(&gzip(&bytes)), ContainerError::Tar(m) if m.contains("checksum")));
}

/// Replaces the manifest of the sample container with `edit(manifest)`.
fn with_manifest(edit: impl FnOnce(String) -> String) -> Vec<u8> {
    let mut edit = Some(edit);
    repacked(|m| {
        for (p, b) in m.iter_mut() {
            if p == "manifest.json" {
                let f = edit.take().unwrap();
                *b = f(String::from_utf8(b.clone()).unwrap()).into_bytes();
            }
        }
    })
}

#[test]
fn manifest_with_duplicate_keys() {
    let bytes = with_manifest(|m| m.replacen("\"name\"", "\"name\": \"evil\",\n  \"name\"", 1));
    assert_eq!(
        err(&bytes),
        ContainerError::Manifest(ManifestError::DuplicateKey("name".into()))
    );
}

#[test]
fn manifest_nesting_too_deep() {
    let deep = format!("{}{}", "[".repeat(100), "]".repeat(100));
    let bytes =
        with_manifest(|m| m.replacen("\"files\"", &format!("\"x\": {deep},\n  \"files\""), 1));
    assert_eq!(
        err(&bytes),
        ContainerError::Manifest(ManifestError::TooDeep)
    );
}

#[test]
fn manifest_with_unknown_format() {
    let bytes = with_manifest(|m| m.replace("agentlang.container/1", "agentlang.container/9"));
    assert_eq!(
        err(&bytes),
        ContainerError::Manifest(ManifestError::UnknownFormat("agentlang.container/9".into()))
    );
}

#[test]
fn manifest_with_unknown_field() {
    let bytes = with_manifest(|m| m.replacen("\"files\"", "\"license\": \"MIT\",\n  \"files\"", 1));
    assert!(matches!(
        err(&bytes),
        ContainerError::Manifest(ManifestError::Invalid(m)) if m.contains("license")
    ));
}

#[test]
fn missing_manifest() {
    let bytes = repacked(|m| m.retain(|(p, _)| p != "manifest.json"));
    assert_eq!(err(&bytes), ContainerError::MissingManifest);
}

#[test]
fn missing_signature() {
    let bytes = repacked(|m| m.retain(|(p, _)| p != "signature.sig"));
    assert_eq!(err(&bytes), ContainerError::MissingSignature);
}

#[test]
fn signature_of_wrong_length() {
    let bytes = repacked(|m| {
        for (p, b) in m.iter_mut() {
            if p == "signature.sig" {
                b.truncate(63);
            }
        }
    });
    assert_eq!(err(&bytes), ContainerError::SignatureLength(63));
}

#[test]
fn kept_member_over_its_cap() {
    let limits = Limits {
        max_kept_member_bytes: 16,
        ..Limits::default()
    };
    assert!(matches!(
        read_with(&sample_container(), limits).unwrap_err(),
        ContainerError::KeptMemberTooLarge { limit: 16, .. }
    ));
}

#[test]
fn kept_members_are_bounded_in_total() {
    // 40 top-level YAML members of 256 KiB each: every one under the
    // per-member limit, 10 MiB together. The reader refuses on the declared
    // sizes, before it holds more than the total limit.
    let bytes = with_extra(|t| {
        for i in 0..40 {
            t.file(&format!("extra{i:02}.yaml"), &vec![b'a'; 256 * 1024]);
        }
    });
    let limits = Limits {
        max_ratio: 10_000,
        ..Limits::default()
    };
    assert_eq!(
        read_with(&bytes, limits).unwrap_err(),
        ContainerError::KeptMembersTooLarge {
            limit: Limits::default().max_kept_total_bytes
        }
    );
}

#[test]
fn the_manifest_check_stops_the_read_where_the_manifest_ends() {
    // Members sorted after manifest.json are never reached: a refusal of
    // the manifest ends the read even before a broken member behind it.
    let bytes = with_extra(|t| {
        t.file("zz-after-manifest.yaml", b"never read");
    });
    let mut seen = None;
    let refused = container::read_checked(&bytes[..], &Limits::default(), |m| {
        seen = Some(m.name().to_string());
        Err("not yours")
    })
    .unwrap_err();
    assert!(matches!(
        refused,
        container::ReadError::Refused("not yours")
    ));
    assert_eq!(seen.as_deref(), Some("demo-agent"));
    // Accepting the manifest reads on, and the container's own checks
    // still apply.
    let accepted = container::read_checked(&sample_container()[..], &Limits::default(), |_| {
        Ok::<(), &str>(())
    });
    assert!(accepted.is_ok());
    assert!(matches!(
        container::read_checked(&bytes[..], &Limits::default(), |_| Ok::<(), &str>(())),
        Err(container::ReadError::Container(
            ContainerError::UnlistedMember(_)
        ))
    ));
}

#[test]
fn name_disagreeing_with_agent_yaml() {
    let bytes = signed_container(
        Kind::Agent,
        &[("agent.yaml", b"name: someone-else\nversion: 1.0.0\n")],
    );
    assert_eq!(
        err(&bytes),
        ContainerError::NameMismatch {
            file: "agent.yaml",
            manifest: "demo-agent".into(),
            definition: "someone-else".into(),
        }
    );
}

#[test]
fn version_disagreeing_with_agent_yaml() {
    let bytes = signed_container(
        Kind::Agent,
        &[("agent.yaml", b"name: demo-agent\nversion: 1.0.1\n")],
    );
    assert_eq!(
        err(&bytes),
        ContainerError::VersionMismatch {
            file: "agent.yaml",
            manifest: "1.0.0".into(),
            definition: "1.0.1".into(),
        }
    );
}

#[test]
fn kind_disagreeing_with_the_definition_file() {
    let bytes = signed_container(Kind::Tool, &[("agent.yaml", AGENT)]);
    assert_eq!(
        err(&bytes),
        ContainerError::KindMismatch {
            manifest: Kind::Tool,
            found: "agent.yaml",
        }
    );
    let bytes = signed_container(Kind::Agent, &[("README.md", b"hi")]);
    assert_eq!(
        err(&bytes),
        ContainerError::MissingDefinition {
            kind: Kind::Agent,
            file: "agent.yaml",
        }
    );
    let bytes = signed_container(Kind::Agent, &[("agent.yaml", b"- not\n- a map\n")]);
    assert!(matches!(
        err(&bytes),
        ContainerError::Definition {
            file: "agent.yaml",
            ..
        }
    ));
}

#[test]
fn tool_containers_check_tool_yaml() {
    let tool_yaml = b"name: demo-agent\nversion: 1.0.0\ndescription: x\n";
    let bytes = signed_container(
        Kind::Tool,
        &[("tool.yaml", tool_yaml), ("README.md", b"# x")],
    );
    let c = read(&bytes).unwrap();
    assert_eq!(c.member("README.md"), Some(b"# x".as_slice()));
    c.verify_signature(&fixed_key().public_key()).unwrap();
}

#[test]
fn encrypted_member_of_the_wrong_shape() {
    let bytes = signed_container(
        Kind::Agent,
        &[
            ("agent.yaml", AGENT),
            ("prompt.yaml.enc", b"plain text, not sealed"),
        ],
    );
    assert_eq!(
        err(&bytes),
        ContainerError::BadEnvelope {
            path: "prompt.yaml.enc".into(),
            source: CryptError::BadMagic,
        }
    );
    let bytes = signed_container(
        Kind::Agent,
        &[
            ("agent.yaml", AGENT),
            ("prompt.yaml.enc", b"AGLENC1\nshort"),
        ],
    );
    assert_eq!(
        err(&bytes),
        ContainerError::BadEnvelope {
            path: "prompt.yaml.enc".into(),
            source: CryptError::TooShort(13),
        }
    );
}

/// A reader that fails after handing out `left` bytes, like a dropped
/// upload.
struct FailingReader<'a> {
    bytes: &'a [u8],
    left: usize,
}

impl std::io::Read for FailingReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.left == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::ConnectionReset,
                "connection reset",
            ));
        }
        let n = buf.len().min(self.left).min(self.bytes.len());
        buf[..n].copy_from_slice(&self.bytes[..n]);
        self.bytes = &self.bytes[n..];
        self.left -= n;
        Ok(n)
    }
}

#[test]
fn input_errors_are_reported_as_io() {
    let bytes = sample_container();
    for left in [0, 1, 100, bytes.len() - 1] {
        let reader = FailingReader {
            bytes: &bytes,
            left,
        };
        assert!(
            matches!(
                container::read(reader, &Limits::default()),
                Err(ContainerError::Io(m)) if m.contains("connection reset")
            ),
            "failing after {left} bytes"
        );
    }
}
