//! The locks README's swap program, once per strategy.
//!
//! `program.rs` is the README's code after its `type Lock = ...;` line (a test keeps the two
//! the same). Each module below is that program with its own `type Lock`: the one line a
//! program written for parking_lot changes to run on another strategy.
//!
//! `cargo run -p plan9-locks --example swap`

macro_rules! with_each_lock {
    ($($module:ident: $lock:ty),+ $(,)?) => {
        $(
            mod $module {
                type Lock = $lock;
                include!("program.rs");
                pub(super) fn run() {
                    main()
                }
            }
        )+
        fn main() {
            $($module::run();)+
        }
    };
}

with_each_lock! {
    spin: locks::SpinYield,
    sem: locks::SemLock,
    adaptive: locks::Adaptive,
    dynamic: locks::DynLock,
}
