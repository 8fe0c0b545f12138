//! Names the build, so that `chantest --version` tells two builds apart (an `--against` run
//! compares two of them): `CHANTEST_BUILD` is the commit (`git rev-parse --short HEAD`), with
//! `+changes` when the checkout's tracked files differ from it; outside a git checkout (a
//! source tarball, git missing) it is the time of the build instead.

use std::path::Path;
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let s = String::from_utf8(out.stdout).ok()?;
    out.status.success().then(|| s.trim().to_string())
}

/// `YYYY-MM-DDTHH:MMZ` of `secs` since the epoch (Howard Hinnant's days-to-civil).
fn utc(secs: u64) -> String {
    let (days, rem) = ((secs / 86400) as i64, secs % 86400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60
    )
}

fn main() {
    let built = || {
        let secs = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        format!("built {}", utc(secs))
    };
    let id = match git(&["rev-parse", "--short", "HEAD"]) {
        Some(commit) if !commit.is_empty() => {
            // Rebuild the name when HEAD moves or a branch is committed to.
            // Only files that exist: cargo reruns a build script whose watched file is
            // missing every time, which rebuilt chantest on every cargo command in a
            // checkout without packed-refs.
            let head = git(&["symbolic-ref", "-q", "HEAD"]);
            for p in ["HEAD", "packed-refs"].into_iter().chain(head.as_deref()) {
                if let Some(path) = git(&["rev-parse", "--git-path", p]) {
                    if Path::new(&path).exists() {
                        println!("cargo:rerun-if-changed={path}");
                    }
                }
            }
            let dirty = git(&["status", "--porcelain", "--untracked-files=no", "--", ".."])
                .is_some_and(|s| !s.is_empty());
            if dirty {
                format!("commit {commit}+changes, {}", built())
            } else {
                format!("commit {commit}")
            }
        }
        _ => built(),
    };
    // The sources that make a build differ from its commit.
    for dir in ["src", "../chan/src", "../locks/src", "build.rs"] {
        if Path::new(dir).exists() {
            println!("cargo:rerun-if-changed={dir}");
        }
    }
    println!("cargo:rerun-if-env-changed=CHANTEST_BUILD");
    let id = std::env::var("CHANTEST_BUILD").unwrap_or(id);
    println!("cargo:rustc-env=CHANTEST_BUILD={id}");
}
