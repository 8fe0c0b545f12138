// `default` and `timeout(duration)`: at most one of them, last, `default` without argument.
use chan::{alt, Chan};

fn default_with_a_duration(c: &Chan<i32>) {
    alt! {
        recv(c) -> _v => {}
        default(std::time::Duration::from_millis(5)) => {}
    }
}

fn default_not_last(a: &Chan<i32>, b: &Chan<i32>) {
    alt! {
        recv(a) -> _v => {}
        default => {}
        recv(b) -> _v => {}
    }
}

fn two_endings(c: &Chan<i32>) {
    alt! {
        recv(c) -> _v => {}
        timeout(std::time::Duration::from_millis(5)) => {}
        default => {}
    }
}

fn timeout_without_a_duration(c: &Chan<i32>) {
    alt! {
        recv(c) -> _v => {}
        timeout => {}
    }
}

fn default_with_a_pattern(c: &Chan<i32>) {
    alt! {
        recv(c) -> _v => {}
        default -> _x => {}
    }
}

async fn timeout_in_async(c: &Chan<i32>) {
    alt! { async;
        recv(c) -> _v => {}
        timeout(std::time::Duration::from_millis(5)) => {}
    }
}

async fn default_with_a_duration_in_async(c: &Chan<i32>) {
    alt! { async;
        recv(c) -> _v => {}
        default(std::time::Duration::from_millis(5)) => {}
    }
}

fn main() {}
