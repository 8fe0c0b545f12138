// An `Alt` may hold arms of values that are not `Send` (an `Rc`), so neither it nor its
// future is `Send`: the compiler must refuse to move the future to another thread. A
// `SendAlt`, whose arms must be `Send`, gives a future that is.
use std::rc::Rc;

fn is_send<T: Send>(_: T) {}

fn main() {
    let c = chan::Chan::<Rc<u32>>::new(1);
    let mut v = None;
    let mut alt = chan::Alt::new();
    alt.recv(&c, &mut v);
    is_send(alt.wait_async());
}
