//! What the documentation tells a user to type, where a test can check it without building
//! twice (`.ci/recipe` runs the regression recipe itself, two release builds, in CI).

use std::path::Path;

fn read(rel: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    std::fs::read_to_string(root.join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

#[test]
fn the_regression_recipe_works_on_a_fresh_clone() {
    // On a fresh clone `main` is checked out, and `git worktree add ../old main` refuses
    // ("'main' is already used by worktree"); --detach checks out its commit instead.
    for doc in ["README.md", "chantest/README.md"] {
        let text = read(doc);
        assert!(!text.contains("git worktree add ../old main"), "{doc}");
        assert!(
            text.contains("git worktree add --detach ../old main"),
            "{doc}"
        );
    }
    // CI runs the README's copy as written.
    assert!(read(".ci/run").contains("bash .ci/recipe"));
    assert!(read(".ci/recipe").contains("## Check: did my change make it slower"));
    assert!(read("README.md").contains("## Check: did my change make it slower?"));
}

#[test]
fn the_chan_readme_says_early_which_features_give_which_adapters() {
    // Once, `rx.stream()` without the `stream` feature was a bare E0599.
    let head: String = read("chan/README.md")
        .lines()
        .take(30)
        .collect::<Vec<_>>()
        .join("\n");
    for want in [
        "`stream` gives `Receiver::stream`",
        "`sink` gives `Sender::sink`",
        "features = [\"stream\",",
    ] {
        assert!(head.contains(want), "{want}:\n{head}");
    }
}

#[test]
fn strategy_name_does_not_promise_what_backend_cannot_do() {
    // It once said Backend knows a strategy by its NAME, which a user's strategy it
    // could not; now it can, once registered, and the doc says so.
    let doc = read("locks/src/strategy.rs").replace("\n    /// ", " ");
    assert!(!doc.contains("The name [`crate::Backend`] knows this strategy by"));
    assert!(doc.contains("a strategy of your own is known by its name once"));
}
