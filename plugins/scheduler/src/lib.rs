//! Built-in scheduler controller.
