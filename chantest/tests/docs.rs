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
