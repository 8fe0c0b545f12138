// A `SendAlt` takes only arms of `Send` values: an arm of `Rc`s is refused at compile time.
use std::rc::Rc;

fn main() {
    let c = chan::Chan::<Rc<u32>>::new(1);
    let mut v = None;
    let mut alt = chan::SendAlt::new();
    alt.recv(&c, &mut v);
}
