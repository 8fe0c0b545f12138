//! The README's swap program and the example CI runs are the same code.
#![cfg(not(loom))]

/// The README's program after its `type Lock` line is `examples/swap/program.rs`.
#[test]
fn the_readme_swap_program_is_the_example() {
    let readme = include_str!("../README.md");
    let program = include_str!("../examples/swap/program.rs");
    let start = readme
        .find("\ntype Lock = ")
        .expect("the README's swap program");
    let body = &readme[start + 1..];
    let body = &body[body.find('\n').expect("a line") + 1..];
    let body = &body[..body.find("```").expect("the end of the code block")];
    assert_eq!(
        body, program,
        "README.md's swap program and examples/swap/program.rs differ: keep them the same"
    );
}
