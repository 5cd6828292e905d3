//! [`Shared`]: big, immutable data handed to components without copying.

use std::ops::Deref;
use std::rc::Rc;

/// An `Rc` that compares by identity, so that Yew properties holding a whole
/// trace compare in O(1): a new run is a new allocation, hence a redraw.
#[derive(Debug, Default)]
pub struct Shared<T>(pub Rc<T>);

impl<T> Shared<T> {
    /// Wraps a value.
    pub fn new(value: T) -> Shared<T> {
        Shared(Rc::new(value))
    }
}

impl<T> Clone for Shared<T> {
    fn clone(&self) -> Self {
        Shared(Rc::clone(&self.0))
    }
}

impl<T> PartialEq for Shared<T> {
    fn eq(&self, other: &Self) -> bool {
        Rc::ptr_eq(&self.0, &other.0)
    }
}

impl<T> Deref for Shared<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}
