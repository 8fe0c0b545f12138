//! What chantest's test files share.

use std::ops::Deref;
use std::path::{Path, PathBuf};

/// A fresh scratch directory for one test, removed when this is dropped (a failed assertion
/// unwinds through the drop too), so that the suite leaves no `/tmp/chantest-*` behind. Its
/// path has no spaces, so that tests may split command lines at whitespace.
#[derive(Debug)]
pub(crate) struct Scratch(PathBuf);

impl Scratch {
    /// `$TMPDIR/chantest-<pid>-<name>`: the pid keeps two copies of the suite apart.
    pub(crate) fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("chantest-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create scratch dir");
        assert!(!dir.display().to_string().contains(char::is_whitespace));
        Scratch(dir)
    }
}

impl Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
