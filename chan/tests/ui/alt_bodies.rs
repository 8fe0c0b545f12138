// Bodies: an expression body must end with a comma (a block body need not).
use chan::{alt, Chan};

fn missing_comma(a: &Chan<i32>, b: &Chan<i32>) -> i32 {
    alt! {
        recv(a) -> v => v.unwrap()
        recv(b) -> v => v.unwrap(),
    }
}

fn semicolon(a: &Chan<i32>, b: &Chan<i32>) -> i32 {
    alt! {
        recv(a) -> v => v.unwrap();
        recv(b) -> v => v.unwrap(),
    }
}

fn missing_body(a: &Chan<i32>) {
    alt! {
        recv(a) -> _v =>
    }
}

fn comma_for_a_body(a: &Chan<i32>, b: &Chan<i32>) {
    alt! {
        recv(a) -> _v => ,
        recv(b) -> _v => {}
    }
}

fn semicolon_after_a_block(a: &Chan<i32>, b: &Chan<i32>) {
    alt! {
        send(a, 1) -> _r => {};
        recv(b) -> _v => {}
    }
}

fn main() {}
