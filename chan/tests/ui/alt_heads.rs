// Arm heads that are not `recv(chan) -> pattern`, `send(chan, value) -> pattern`, `default`
// or `timeout(duration)`.
use chan::{alt, Chan};

fn misspelt_kind(c: &Chan<i32>) {
    alt! {
        recieve(c) -> v => v.unwrap(),
    }
}

fn recv_with_two_channels(a: &Chan<i32>, b: &Chan<i32>) {
    alt! {
        recv(a, b) -> v => v.unwrap(),
    }
}

fn send_without_a_value(c: &Chan<i32>) {
    alt! {
        send(c) -> r => r.is_ok(),
    }
}

fn recv_without_a_pattern(c: &Chan<i32>) {
    alt! {
        recv(c) => {}
    }
}

fn send_without_a_pattern(c: &Chan<i32>) {
    alt! {
        send(c, 1) => {}
    }
}

fn recv_without_a_fat_arrow(c: &Chan<i32>) {
    alt! {
        recv(c) -> v { v.unwrap(); }
    }
}

fn recv_without_parentheses(c: &Chan<i32>) {
    alt! {
        recv c -> v => v.unwrap(),
    }
}

fn empty() {
    alt! {}
}

fn main() {}
